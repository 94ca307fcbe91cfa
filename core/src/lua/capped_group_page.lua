#!lua flags=no-writes
--[[ A page of the groups that hold data (those capped_groups.lua lists), by ZSCAN of the live
  zset: about `count` groups' work per call however many there are, in no particular order.
  As with SCAN, a group that holds data through the walk is listed once; one that comes or goes
  meanwhile may be listed or not.
  KEYS[1] live zset (group -> expiry ms, +inf without TTL)
  ARGV[1] SCAN cursor   ARGV[2] count (1-250)
  Returns: { names, next cursor ("0": the walk is done) }. ]]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local count = tonumber(ARGV[2])
local cursor, names = ARGV[1], {}
-- At most 8 ZSCAN calls, so a stretch of expired groups costs calls, not one long one.
for _ = 1, 8 do
  local r = redis.call('ZSCAN', KEYS[1], cursor, 'COUNT', count)
  cursor = r[1]
  local items = r[2]
  for i = 1, #items, 2 do
    local score = items[i + 1]
    if score == 'inf' or tonumber(score) > now then names[#names + 1] = items[i] end
  end
  if cursor == '0' or #names >= count then break end
end
return { names, cursor }
