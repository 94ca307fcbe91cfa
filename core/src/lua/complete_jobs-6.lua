--[[ Complete leased jobs (a worker's acks, batched). Only the holder of a job's current lease
  token may complete it; a stale token gets -1 for that job (LEASE_LOST) and changes nothing.
  Then trims retained completed jobs to the newest ARGV[1] and those younger than ARGV[2] ms.
  KEYS[1] active zset   KEYS[2] done zset (score = finish ms)   KEYS[3] jobs hash
  KEYS[4] meta hash (id -> "state|attempts|max|enqueued|token")  KEYS[5] errors hash   KEYS[6] stats hash
  ARGV[1] keep last N completed (0 = delete at once)   ARGV[2] keep for ms (0 = no age limit)
  ARGV[3], ARGV[4], ...: pairs of job id, lease token
  Returns: array with, per pair, 1 completed or -1 lease lost. ]]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local keep = tonumber(ARGV[1])
local keepfor = tonumber(ARGV[2])
local out = {}
local done = 0
for i = 3, #ARGV, 2 do
  local id, tok = ARGV[i], ARGV[i + 1]
  local m = redis.call('HGET', KEYS[4], id)
  local ok = false
  if m then
    local s, rest, mtok = string.match(m, '^(%a)|(%d+|%d+|%d+)|(.*)$')
    ok = s == 'a' and mtok == tok and redis.call('ZREM', KEYS[1], id) == 1
    if ok then
      if keep > 0 then
        redis.call('HSET', KEYS[4], id, 'c|' .. rest .. '|')
        redis.call('ZADD', KEYS[2], now, id)
      else
        redis.call('HDEL', KEYS[3], id)
        redis.call('HDEL', KEYS[4], id)
        redis.call('HDEL', KEYS[5], id)
      end
    end
  end
  if ok then
    done = done + 1
    out[#out + 1] = 1
  else
    out[#out + 1] = -1
  end
end
if done > 0 then
  redis.call('HINCRBY', KEYS[6], 'completed', done)
  if keep > 0 then
    local over = redis.call('ZCARD', KEYS[2]) - keep
    local old = {}
    if over > 0 then
      local popped = redis.call('ZPOPMIN', KEYS[2], math.min(over, 1000))
      for i = 1, #popped, 2 do old[#old + 1] = popped[i] end -- member, score pairs
    end
    if keepfor > 0 then
      local stale = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - keepfor, 'LIMIT', 0, 100)
      if #stale > 0 then
        redis.call('ZREM', KEYS[2], unpack(stale))
        for _, id in ipairs(stale) do old[#old + 1] = id end
      end
    end
    if #old > 0 then
      redis.call('HDEL', KEYS[3], unpack(old))
      redis.call('HDEL', KEYS[4], unpack(old))
      redis.call('HDEL', KEYS[5], unpack(old))
    end
  end
end
return out
