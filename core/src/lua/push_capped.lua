--[[ Append items to capped groups: drop the oldest above capacity, refresh the TTL, keep each
  group in the registry (live until its TTL, in the rotation once), and wake waiting consumers
  when a group goes from empty to non-empty. One call may carry items for many groups.
  KEYS[1] registry list (rotation order)   KEYS[2] registry_set (groups in the rotation list)
  KEYS[3] live zset (group -> expiry ms, +inf without TTL; drained groups leave it)   KEYS[4] stats hash
  KEYS[5] wake list (general consumers)
  then per group i = 1..G: KEYS[6 + 2(i-1)] its list, KEYS[7 + 2(i-1)] its wake list
  ARGV[1] capacity (>= 1)   ARGV[2] group TTL in ms (0 = no TTL)   ARGV[3] G
  ARGV[4 .. 3+G]            group names, in the order of their KEYS
  ARGV[4+G ..]              pairs: group index (1..G), item bytes
  Each item is stored as "<enqueue ms by Redis TIME>:<item bytes>".
  Returns: array with the number of items dropped by each pushed item, in order. ]]
--#include lib/capped_push.lua
local cap = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local ngroups = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local stamp = now .. ':'
local drops = {}
local total_dropped = 0
-- Per group index: true when this call found the group empty (its first push made length 1).
local touched = {}
local n = 0
for a = 4 + ngroups, #ARGV, 2 do
  local gi = tonumber(ARGV[a])
  local dropped = capped_append(KEYS[4 + 2 * gi], gi, ARGV[a + 1], stamp, cap, touched)
  total_dropped = total_dropped + dropped
  n = n + 1
  drops[n] = dropped
end
capped_touched(touched, 4, ttl, now)
redis.call('HINCRBY', KEYS[4], 'pushed', n)
if total_dropped > 0 then redis.call('HINCRBY', KEYS[4], 'dropped', total_dropped) end
return drops
