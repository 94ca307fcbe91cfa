--[[ Pop up to ARGV[1] fresh items from each of G groups, oldest first (exactly ARGV[1] when that
  many fresh items are queued); items older than ARGV[2] ms are discarded and counted, never
  returned. A group left empty leaves the live zset; it leaves the rotation when the round-robin
  next meets it (O(1), no search of the rotation list). Then, when ARGV[4] > 0,
  advance the round-robin over up to ARGV[4] live groups (skipping those named after the popped
  ones) and return them: the groups the caller pops next.
  KEYS[1] registry list (rotation order)   KEYS[2] registry_set (groups in the rotation list)
  KEYS[3] live zset (group -> expiry ms, +inf without TTL)   KEYS[4] stats hash
  then KEYS[4 + i], i = 1..G: the list of the i-th group to pop
  ARGV[1] max items per group (>= 1)   ARGV[2] max age in ms (0 = keep all)   ARGV[3] G
  ARGV[4] how many next groups to return (0: no round-robin)
  ARGV[5 .. 4+G] the groups to pop, in the order of their KEYS; ARGV[5+G ..] groups to skip
  Returns: { batches, next }: batches = array of { group, items ("<ms>:<bytes>", oldest first) }
  for each popped group that gave items; next = array of group names. ]]
local max = tonumber(ARGV[1])
local maxage = tonumber(ARGV[2])
local ngroups = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local batches, delivered, discarded = {}, 0, 0
for i = 1, ngroups do
  local key, name = KEYS[4 + i], ARGV[4 + i]
  local out = {}
  if maxage == 0 then
    -- Nothing can be stale: one LPOP, returned as is.
    out = redis.call('LPOP', key, max) or out
  else
    while #out < max do
      local got = redis.call('LPOP', key, max - #out)
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
  -- Fewer than asked: the list is empty now (no LLEN needed).
  if (maxage == 0 and #out < max) or redis.call('LLEN', key) == 0 then
    redis.call('ZREM', KEYS[3], name)
  end
  if #out > 0 then
    batches[#batches + 1] = { name, out }
    delivered = delivered + #out
  end
end
if delivered > 0 then redis.call('HINCRBY', KEYS[4], 'delivered', delivered) end
if discarded > 0 then redis.call('HINCRBY', KEYS[4], 'discarded', discarded) end
local nexts = {}
if want > 0 then
  local skip = {}
  for i = 5 + ngroups, #ARGV do skip[ARGV[i]] = true end
  local n = redis.call('LLEN', KEYS[1])
  for _ = 1, n do
    if #nexts >= want then break end
    local g = redis.call('LMOVE', KEYS[1], KEYS[1], 'LEFT', 'RIGHT')
    if not g then break end
    local score = redis.call('ZSCORE', KEYS[3], g)
    if score and (score == 'inf' or tonumber(score) > now) then
      if not skip[g] then nexts[#nexts + 1] = g end
    else
      -- Drained (no score) or its TTL passed: it leaves the rotation.
      redis.call('RPOP', KEYS[1])
      redis.call('SREM', KEYS[2], g)
      if score then redis.call('ZREM', KEYS[3], g) end
    end
  end
end
return { batches, nexts }
