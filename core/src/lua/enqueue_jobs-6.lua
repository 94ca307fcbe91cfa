--[[ Enqueue jobs: ready at once, or delayed until a due time. An id that already exists creates
  nothing (idempotency). Due times are computed with Redis TIME, never the client's clock.
  KEYS[1] jobs hash (id -> envelope)   KEYS[2] meta hash (id -> "state|attempts|max|enqueued ms|token")
  KEYS[3] ready list                   KEYS[4] delayed zset (score = due ms)
  KEYS[5] wake list                    KEYS[6] stats hash
  ARGV[1] number of jobs N; then per job 5 values:
    id, envelope, max attempts, delay ms (relative to Redis now), run-at ms (absolute; 0 = use delay)
  State letters: q queued (ready, or delayed while in the delayed zset), a active, x dead, c completed.
  Returns: array of N integers, 1 = created, 0 = the id already existed (nothing written). ]]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local n = tonumber(ARGV[1])
local out = {}
local created = 0
for i = 0, n - 1 do
  local b = 2 + i * 5
  local id = ARGV[b]
  if redis.call('HSETNX', KEYS[1], id, ARGV[b + 1]) == 1 then
    redis.call('HSET', KEYS[2], id, 'q|0|' .. ARGV[b + 2] .. '|' .. now .. '|')
    local runat = tonumber(ARGV[b + 4])
    local due = now + tonumber(ARGV[b + 3])
    if runat > 0 then due = runat end
    if due <= now then
      redis.call('RPUSH', KEYS[3], id)
    else
      redis.call('ZADD', KEYS[4], due, id)
    end
    created = created + 1
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if created > 0 then
  redis.call('RPUSH', KEYS[5], '1')
  redis.call('LTRIM', KEYS[5], -64, -1)
  redis.call('PEXPIRE', KEYS[5], 60000)
  redis.call('HINCRBY', KEYS[6], 'enqueued', created)
end
return out
