--[[ Remove up to ARGV[1] fresh items from one group, oldest first; exactly ARGV[1] when that many
  fresh items are queued. Items older than ARGV[2] ms are discarded and counted, never returned.
  A group left empty leaves the registry in the same atomic step.
  KEYS[1] group list   KEYS[2] registry list   KEYS[3] registry_set   KEYS[4] stats hash
  ARGV[1] max items (>= 1)   ARGV[2] max age in ms (0 = keep all)   ARGV[3] group name
  ARGV[4] "1" to also advance the round-robin and return the next group, "0" not to
  ARGV[5 ..] groups the round-robin must skip
  Returns: { items ("<ms>:<bytes>", oldest first), discarded count, next group or false } ]]
local max = tonumber(ARGV[1])
local maxage = tonumber(ARGV[2])
local out = {}
local discarded = 0
local now = 0
if maxage > 0 then
  local t = redis.call('TIME')
  now = t[1] * 1000 + math.floor(t[2] / 1000)
end
if maxage == 0 then
  -- Nothing can be stale: one LPOP, returned as is.
  out = redis.call('LPOP', KEYS[1], max) or out
else
  while #out < max do
    local got = redis.call('LPOP', KEYS[1], max - #out)
    if not got then break end
    for _, item in ipairs(got) do
      local sep = string.find(item, ':', 1, true)
      if now - tonumber(string.sub(item, 1, sep - 1)) > maxage then
        discarded = discarded + 1
      else
        out[#out + 1] = item
      end
    end
  end
end
if redis.call('LLEN', KEYS[1]) == 0 then
  if redis.call('SREM', KEYS[3], ARGV[3]) == 1 then
    redis.call('LREM', KEYS[2], 0, ARGV[3])
  end
end
if #out > 0 then redis.call('HINCRBY', KEYS[4], 'delivered', #out) end
if discarded > 0 then redis.call('HINCRBY', KEYS[4], 'discarded', discarded) end
local nextg = false
if ARGV[4] == '1' then
  local skip = {}
  for i = 5, #ARGV do skip[ARGV[i]] = true end
  local n = redis.call('LLEN', KEYS[2])
  for _ = 1, n do
    local g = redis.call('LMOVE', KEYS[2], KEYS[2], 'LEFT', 'RIGHT')
    if not skip[g] then nextg = g break end
  end
end
return { out, discarded, nextg }
