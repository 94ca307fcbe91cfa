#!lua flags=no-writes
--[[ The groups that hold data, in round-robin order, and how many: the rotation list without the
  groups that were drained or whose TTL passed (they leave it lazily, when the round-robin meets
  them). O(n); count_capped_groups.lua only counts them.
  KEYS[1] registry list (rotation order)   KEYS[2] live zset (group -> expiry ms, +inf without TTL)
  ARGV: none
  Returns: { names, count }. ]]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local names = {}
local count = 0
for _, g in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local score = redis.call('ZSCORE', KEYS[2], g)
  if score and (score == 'inf' or tonumber(score) > now) then
    count = count + 1
    names[count] = g
  end
end
return { names, count }
