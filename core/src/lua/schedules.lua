#!lua flags=no-writes
--[[ Read a queue's schedules (see "Schedules" in lib_jobs.lua): the due ones (for the processes
  that fire them) or all of them (for `schedules()`). Writes nothing.
  KEYS[1] sched hash (name -> "<version>|<spec>")   KEYS[2] snext zset (name -> next slot ms)
  ARGV[1] "due" or "all"   ARGV[2] most schedules returned ("all": about that many, by HSCAN)
  ARGV[3] "all": the HSCAN cursor to go on from ("0" to start)
  Returns: { Redis now ms, the earliest next slot (-1: none), the next cursor ("0": no more), then
  per schedule its name, its next slot ("" when it has none) and its stored "<version>|<spec>" }. ]]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local limit = tonumber(ARGV[2])
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local out = { now, first[2] and tonumber(first[2]) or -1, '0' }
if ARGV[1] == 'due' then
  if out[2] < 0 or out[2] > now then return out end
  local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
  for i = 1, #due, 2 do
    local spec = redis.call('HGET', KEYS[1], due[i])
    if spec then
      out[#out + 1] = due[i]
      out[#out + 1] = due[i + 1]
      out[#out + 1] = spec
    end
  end
else
  local page = redis.call('HSCAN', KEYS[1], ARGV[3], 'COUNT', limit)
  out[3] = page[1]
  local all = page[2]
  for i = 1, #all, 2 do
    out[#out + 1] = all[i]
    out[#out + 1] = redis.call('ZSCORE', KEYS[2], all[i]) or ''
    out[#out + 1] = all[i + 1]
  end
end
return out
