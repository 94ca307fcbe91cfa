#!lua flags=no-writes
--[[ Read a queue's due schedules, for the processes that fire them (docs/data-model.md,
  "Schedules"). Writes nothing. (All of them, by page: list_schedules.lua.) At most ARGV[1] a
  call, the earliest due first: the caller fires them and reads again for the next ones.
  KEYS[1] sched hash (name -> "<version>|<spec>")   KEYS[2] snext zset (name -> next slot ms)
  ARGV[1] most schedules returned
  Returns: { Redis now ms, the earliest next slot (-1: none), "0", then per due schedule its name,
  its next slot and its stored "<version>|<spec>" }. ]]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local limit = tonumber(ARGV[1])
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local out = { now, first[2] and tonumber(first[2]) or -1, '0' }
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
return out
