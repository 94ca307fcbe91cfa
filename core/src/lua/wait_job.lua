--[[ A waiter's view of one job, and its registration (lib_jobs.lua, "Waiters"): with ARGV[2] "1"
  the caller is counted as a waiter, but only while the job is unfinished (so a job that finishes
  later tells it through `fin:<id>`); "-1" takes a waiter off (a wait that gave up), dropping the
  job's notice list once nobody waits (unless the job finished: its waiters were told, and the
  other waiters' notices stay); "0" only looks.
  KEYS[1] meta hash   KEYS[2] results hash   KEYS[3] errors hash   KEYS[4] waiters hash
  KEYS[5] fin (prefix of the waiters' notice lists)   KEYS[6] cfg hash (its `waited` field says
  the queue has had waiters, see lib_jobs.lua)
  ARGV[1] job id   ARGV[2] "1" register, "-1" unregister, "0" look
  Returns: { state, enqueued ms, result, last error }: state "q" unfinished, "c" completed, "x"
  dead, or nil when there is no such job (the others nil when absent). ]]
--#include lib_jobs.lua
local id, op = ARGV[1], ARGV[2]
if op == '-1' then
  -- No field: the job finished and its waiters were told (their notices stay for the others).
  local n = tonumber(redis.call('HGET', KEYS[4], id))
  if n and n <= 1 then
    redis.call('HDEL', KEYS[4], id)
    redis.call('DEL', KEYS[5] .. id)
  elseif n then
    redis.call('HINCRBY', KEYS[4], id, -1)
  end
end
local m = redis.call('HGET', KEYS[1], id)
if not m then return { false, false, false, false } end
local s, _, _, enq = parse_meta(m)
if not s then
  -- An unreadable record: reported as unfinished with its text, so the caller can say so.
  return { 'q', '0', false, 'unreadable job record (meta ' .. string.format('%q', m) .. ')' }
end
if s == 'q' then
  if op == '1' then
    redis.call('HINCRBY', KEYS[4], id, 1)
    redis.call('HSET', KEYS[6], 'waited', '1')
  end
  return { s, enq, false, false }
end
local result = false
if s == 'c' then result = redis.call('HGET', KEYS[2], id) end
return { s, enq, result, redis.call('HGET', KEYS[3], id) }
