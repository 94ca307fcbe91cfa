--[[ Push items of the shard's unreadable list back to their groups: each entry named is removed
  from the list and, only when it was still there (so two callers never push one twice), its item
  is appended to its group as push_capped.lua does (drop the oldest above capacity, refresh the
  TTL, keep the group in the registry, wake consumers).
  KEYS[1] registry list (rotation order)   KEYS[2] registry_set (groups in the rotation list)
  KEYS[3] live zset (group -> expiry ms, +inf without TTL)   KEYS[4] stats hash
  KEYS[5] wake list (general consumers)   KEYS[6] unreadable list
  then per group i = 1..G: KEYS[7 + 2(i-1)] its list, KEYS[8 + 2(i-1)] its wake list
  ARGV[1] capacity (>= 1)   ARGV[2] group TTL in ms (0 = no TTL)   ARGV[3] G
  ARGV[4 .. 3+G]            group names, in the order of their KEYS
  ARGV[4+G ..]              triples: group index (1..G), the unreadable entry, the item bytes
  Returns: how many items were pushed back. ]]
--#include lib/capped_push.lua
local cap = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local ngroups = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local stamp = now .. ':'
local touched = {}
local n, total_dropped = 0, 0
for a = 4 + ngroups, #ARGV, 3 do
  if redis.call('LREM', KEYS[6], 1, ARGV[a + 1]) == 1 then
    local gi = tonumber(ARGV[a])
    total_dropped = total_dropped
      + capped_append(KEYS[5 + 2 * gi], gi, ARGV[a + 2], stamp, cap, touched)
    n = n + 1
  end
end
capped_touched(touched, 5, ttl, now)
if n > 0 then redis.call('HINCRBY', KEYS[4], 'requeued', n) end
if total_dropped > 0 then redis.call('HINCRBY', KEYS[4], 'dropped', total_dropped) end
return n
