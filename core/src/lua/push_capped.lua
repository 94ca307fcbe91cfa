--[[ Append items to capped groups: drop the oldest above capacity, refresh the TTL, register
  groups that were empty, and wake waiting consumers. One call may carry items for many groups.
  KEYS[1] registry list (rotation order)   KEYS[2] registry_set   KEYS[3] stats hash
  KEYS[4] wake list (general consumers)
  then per group i = 1..G: KEYS[5 + 2(i-1)] its list, KEYS[6 + 2(i-1)] its wake list
  ARGV[1] capacity (>= 1)   ARGV[2] group TTL in ms (0 = no TTL)   ARGV[3] G
  ARGV[4 .. 3+G]            group names, in the order of their KEYS
  ARGV[4+G ..]              pairs: group index (1..G), item bytes
  Each item is stored as "<enqueue ms by Redis TIME>:<item bytes>".
  Returns: array with the number of items dropped by each pushed item, in order. ]]
local cap = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local ngroups = tonumber(ARGV[3])
local t = redis.call('TIME')
local stamp = (t[1] * 1000 + math.floor(t[2] / 1000)) .. ':'
local drops = {}
local total_dropped = 0
local touched = {}
local n = 0
for a = 4 + ngroups, #ARGV, 2 do
  local gi = tonumber(ARGV[a])
  local key = KEYS[3 + 2 * gi]
  local len = redis.call('RPUSH', key, stamp .. ARGV[a + 1])
  local dropped = 0
  if len > cap then
    dropped = len - cap
    redis.call('LTRIM', key, dropped, -1)
  end
  total_dropped = total_dropped + dropped
  n = n + 1
  drops[n] = dropped
  touched[gi] = true
end
local woke = false
for gi in pairs(touched) do
  local key = KEYS[3 + 2 * gi]
  if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
  local name = ARGV[3 + gi]
  if redis.call('SADD', KEYS[2], name) == 1 then
    redis.call('RPUSH', KEYS[1], name)
    local gw = KEYS[4 + 2 * gi]
    redis.call('RPUSH', gw, '1')
    redis.call('LTRIM', gw, -16, -1)
    redis.call('PEXPIRE', gw, 60000)
    woke = true
  end
end
if woke then
  redis.call('RPUSH', KEYS[4], '1')
  redis.call('LTRIM', KEYS[4], -64, -1)
  redis.call('PEXPIRE', KEYS[4], 60000)
end
redis.call('HINCRBY', KEYS[3], 'pushed', n)
if total_dropped > 0 then redis.call('HINCRBY', KEYS[3], 'dropped', total_dropped) end
return drops
