#!lua flags=no-writes
--[[ How many groups hold data (O(log n)): the live zset's groups whose TTL has not passed
  (capped_groups.lua lists them).
  KEYS[1] live zset (group -> expiry ms, +inf without TTL)
  ARGV: none
  Returns: { {}, count }. ]]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
return { {}, redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf') }
