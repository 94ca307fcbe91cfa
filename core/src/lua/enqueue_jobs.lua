--[[ Enqueue jobs: ready at once, or delayed until a due time. An id that already exists creates
  nothing (idempotency), nor does an explicit id that finished within the idempotency window.
  Due times are computed with Redis TIME, never the client's clock.
  KEYS[1] jobs hash (id -> envelope)   KEYS[2] meta hash (id -> "state|attempts|max|enqueued ms|x", see lib_jobs.lua)
  KEYS[3] ready list                   KEYS[4] delayed zset (score = due ms)
  KEYS[5] wake list                    KEYS[6] stats hash
  KEYS[7] idem zset (explicit ids, see lib_jobs.lua)
  ARGV[1] number of jobs N   ARGV[2] "1": remember explicit ids (the window is on), "0": not
  then per job 6 values: id, envelope, max attempts, delay ms (relative to Redis now),
    run-at ms (absolute; 0 = use delay), "1" if the id was given by the caller
  Returns: array of N integers, 1 = created, 0 = the id already existed (nothing written). ]]
--#include lib_jobs.lua
local now = now_ms()
local nows = tostring(now)
local n = tonumber(ARGV[1])
local ids = {}
for i = 1, n do ids[i] = ARGV[3 + (i - 1) * 6] end
-- One HMGET for the existence check and one variadic call per key for the writes: per-job calls
-- from Lua would cost more than the work itself.
local exists = hmget(KEYS[1], ids)
local remembered = {}
if redis.call('EXISTS', KEYS[7]) == 1 then
  for i = 1, n, 1000 do
    local part = redis.call('ZMSCORE', KEYS[7], unpack(ids, i, math.min(i + 999, n)))
    for j = 1, #part do remembered[i + j - 1] = part[j] end
  end
end
local out, seen, created = {}, {}, 0
local jobs, meta, ready, delayed, idem = {}, {}, {}, {}, {}
for i = 1, n do
  local b = 3 + (i - 1) * 6
  local id = ids[i]
  if exists[i] or remembered[i] or seen[id] then
    out[i] = 0
  else
    seen[id] = true
    jobs[#jobs + 1] = id
    jobs[#jobs + 1] = ARGV[b + 1]
    meta[#meta + 1] = id
    meta[#meta + 1] = meta_of('q', '0', ARGV[b + 2], nows, '0')
    local runat = tonumber(ARGV[b + 4])
    local due = now + tonumber(ARGV[b + 3])
    if runat > 0 then due = runat end
    if due <= now then
      ready[#ready + 1] = id
    else
      delayed[#delayed + 1] = due
      delayed[#delayed + 1] = id
    end
    if ARGV[2] == '1' and ARGV[b + 5] == '1' then
      idem[#idem + 1] = '+inf'
      idem[#idem + 1] = id
    end
    created = created + 1
    out[i] = 1
  end
end
if #jobs > 0 then
  chunked('HSET', KEYS[1], jobs)
  chunked('HSET', KEYS[2], meta)
  chunked('RPUSH', KEYS[3], ready)
  chunked('ZADD', KEYS[4], delayed)
  chunked('ZADD', KEYS[7], idem)
  wake(KEYS[5])
  redis.call('HINCRBY', KEYS[6], 'enqueued', created)
end
return out
