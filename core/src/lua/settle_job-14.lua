--[[ Settle one leased job: complete it, fail it (retry after a delay or dead-letter it), or
  release it (graceful shutdown: back to the front of ready, attempt not counted). Only the holder
  of the current lease token may settle; anyone else gets -1 (LEASE_LOST).
  KEYS[1] active zset    KEYS[2] ready list      KEYS[3] delayed zset    KEYS[4] dead zset
  KEYS[5] done zset (score = finished ms)        KEYS[6] jobs hash       KEYS[7] state hash
  KEYS[8] attempts hash  KEYS[9] tokens hash     KEYS[10] max-attempts hash
  KEYS[11] errors hash   KEYS[12] enqueued-at hash   KEYS[13] stats hash   KEYS[14] wake list
  ARGV[1] action: "complete" | "fail" | "release"   ARGV[2] job id   ARGV[3] lease token
  complete: ARGV[4] keep last N finished jobs (0 = delete at once), ARGV[5] keep for ms (0 = no limit)
  fail:     ARGV[4] error text (already size-capped), ARGV[5] retry delay ms
  Returns: -1 lease lost; complete -> 1; fail -> 1 retried, 2 dead-lettered; release -> 1 ]]
local id = ARGV[2]
if redis.call('HGET', KEYS[9], id) ~= ARGV[3] or not redis.call('ZSCORE', KEYS[1], id) then
  return -1
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREM', KEYS[1], id)
redis.call('HDEL', KEYS[9], id)

local function forget(jid)
  for k = 6, 12 do redis.call('HDEL', KEYS[k], jid) end
end

local function wake()
  redis.call('RPUSH', KEYS[14], '1')
  redis.call('LTRIM', KEYS[14], -64, -1)
  redis.call('PEXPIRE', KEYS[14], 60000)
end

local action = ARGV[1]
if action == 'complete' then
  redis.call('HINCRBY', KEYS[13], 'completed', 1)
  local keep = tonumber(ARGV[4])
  local keepfor = tonumber(ARGV[5])
  if keep <= 0 then
    forget(id)
    return 1
  end
  redis.call('HSET', KEYS[7], id, 'c')
  redis.call('ZADD', KEYS[5], now, id)
  local over = redis.call('ZCARD', KEYS[5]) - keep
  if over > 0 then
    local popped = redis.call('ZPOPMIN', KEYS[5], math.min(over, 100))
    for i = 1, #popped, 2 do -- member, score pairs
      if redis.call('HGET', KEYS[7], popped[i]) == 'c' then forget(popped[i]) end
    end
  end
  if keepfor > 0 then
    local stale = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now - keepfor, 'LIMIT', 0, 100)
    for _, old in ipairs(stale) do
      redis.call('ZREM', KEYS[5], old)
      forget(old)
    end
  end
  return 1
elseif action == 'fail' then
  redis.call('HSET', KEYS[11], id, ARGV[4])
  local att = tonumber(redis.call('HGET', KEYS[8], id) or '0')
  local max = tonumber(redis.call('HGET', KEYS[10], id) or '1')
  if att >= max then
    redis.call('ZADD', KEYS[4], now, id)
    redis.call('HSET', KEYS[7], id, 'x')
    redis.call('HINCRBY', KEYS[13], 'failed', 1)
    return 2
  end
  local delay = tonumber(ARGV[5])
  if delay <= 0 then
    redis.call('RPUSH', KEYS[2], id)
    redis.call('HSET', KEYS[7], id, 'r')
  else
    redis.call('ZADD', KEYS[3], now + delay, id)
    redis.call('HSET', KEYS[7], id, 'd')
  end
  redis.call('HINCRBY', KEYS[13], 'retried', 1)
  wake()
  return 1
elseif action == 'release' then
  redis.call('HINCRBY', KEYS[8], id, -1)
  redis.call('LPUSH', KEYS[2], id)
  redis.call('HSET', KEYS[7], id, 'r')
  wake()
  return 1
end
return redis.error_reply('unknown action ' .. tostring(action))
