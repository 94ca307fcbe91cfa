--[[ Enqueue jobs: ready at once, or delayed until a due time. An id that already exists creates
  nothing (idempotency). Due times are computed with Redis TIME, never the client's clock.
  KEYS[1] jobs hash (id -> envelope)   KEYS[2] state hash (id -> d|r|a|x|c)
  KEYS[3] max-attempts hash            KEYS[4] enqueued-at hash (id -> ms)
  KEYS[5] ready list                   KEYS[6] delayed zset (score = due ms)
  KEYS[7] wake list                    KEYS[8] stats hash
  ARGV[1] number of jobs N; then per job 5 values:
    id, envelope, max attempts, delay ms (relative to Redis now), run-at ms (absolute; 0 = use delay)
  Returns: array of N integers, 1 = created, 0 = the id already existed (nothing written). ]]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local n = tonumber(ARGV[1])
local out = {}
local woke = false
local created = 0
for i = 0, n - 1 do
  local b = 2 + i * 5
  local id = ARGV[b]
  if redis.call('HSETNX', KEYS[1], id, ARGV[b + 1]) == 1 then
    redis.call('HSET', KEYS[3], id, ARGV[b + 2])
    redis.call('HSET', KEYS[4], id, now)
    local runat = tonumber(ARGV[b + 4])
    local due = now + tonumber(ARGV[b + 3])
    if runat > 0 then due = runat end
    if due <= now then
      redis.call('RPUSH', KEYS[5], id)
      redis.call('HSET', KEYS[2], id, 'r')
    else
      redis.call('ZADD', KEYS[6], due, id)
      redis.call('HSET', KEYS[2], id, 'd')
    end
    woke = true
    created = created + 1
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if woke then
  redis.call('RPUSH', KEYS[7], '1')
  redis.call('LTRIM', KEYS[7], -64, -1)
  redis.call('PEXPIRE', KEYS[7], 60000)
end
if created > 0 then redis.call('HINCRBY', KEYS[8], 'enqueued', created) end
return out
