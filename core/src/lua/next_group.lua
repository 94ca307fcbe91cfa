--[[ Advance the round-robin over groups with data and return the next one.
  KEYS[1] registry list (rotation order)
  ARGV[1], ARGV[2], ... groups to skip (served by dedicated consumers)
  Returns: the next group name, or false when no (unskipped) group has data. ]]
local skip = {}
for i = 1, #ARGV do skip[ARGV[i]] = true end
local n = redis.call('LLEN', KEYS[1])
for _ = 1, n do
  local g = redis.call('LMOVE', KEYS[1], KEYS[1], 'LEFT', 'RIGHT')
  if not skip[g] then return g end
end
return false
