--[[ Pop up to ARGV[1] fresh items from each of G groups, oldest first (exactly ARGV[1] when that
  many fresh items are queued); items older than ARGV[2] ms are discarded and counted, never
  returned. A group left empty leaves the live zset; it leaves the rotation when the round-robin
  next meets it (O(1), no search of the rotation list). Then, when ARGV[4] > 0,
  advance the round-robin over up to ARGV[4] live groups (skipping those named after the popped
  ones) and return them: the groups the caller pops next. The walk looks at most ARGV[4] + 1000
  entries of the rotation, so a rotation full of drained groups is cleared over several calls,
  never in one long one.
  KEYS[1] registry list (rotation order)   KEYS[2] registry_set (groups in the rotation list)
  KEYS[3] live zset (group -> expiry ms, +inf without TTL)   KEYS[4] stats hash
  then KEYS[4 + i], i = 1..G: the list of the i-th group to pop
  ARGV[1] max items per group (>= 1)   ARGV[2] max age in ms (0 = keep all)   ARGV[3] G
  ARGV[4] how many next groups to return (0: no round-robin)
  ARGV[5 .. 4+G] the groups to pop, in the order of their KEYS; ARGV[5+G ..] groups to skip
  Returns: { batches, next, more }: batches = array of { group, items ("<ms>:<bytes>", oldest
  first) } for each popped group that gave items; next = array of group names; more = 1 when the
  walk stopped at its bound with rotation entries it did not look at (call again), else 0. ]]
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
local nexts, more = {}, 0
if want > 0 then
  local skip = {}
  for i = 5 + ngroups, #ARGV do skip[ARGV[i]] = true end
  local n = redis.call('LLEN', KEYS[1])
  local bound = math.min(n, want + 1000)
  local seen = 0
  -- The rotation's head, 200 entries at a time: the entries up to the one that completes `next`
  -- are rotated (live ones to the back, drained or expired ones out), the rest left in place.
  while seen < bound and #nexts < want do
    local heads = redis.call('LRANGE', KEYS[1], 0, math.min(bound - seen, 200) - 1)
    if #heads == 0 then break end
    local scores = redis.call('ZMSCORE', KEYS[3], unpack(heads)) -- bounded: 200
    local back, gone, expired, used = {}, {}, {}, 0
    for i, g in ipairs(heads) do
      used = i
      local score = scores[i]
      if score and (score == 'inf' or tonumber(score) > now) then
        back[#back + 1] = g
        if not skip[g] then nexts[#nexts + 1] = g end
      else
        -- Drained (no score) or its TTL passed: it leaves the rotation.
        gone[#gone + 1] = g
        if score then expired[#expired + 1] = g end
      end
      if #nexts >= want then break end
    end
    redis.call('LPOP', KEYS[1], used)
    seen = seen + used
    if #back > 0 then redis.call('RPUSH', KEYS[1], unpack(back)) end -- bounded: 200
    if #gone > 0 then redis.call('SREM', KEYS[2], unpack(gone)) end -- bounded: 200
    if #expired > 0 then redis.call('ZREM', KEYS[3], unpack(expired)) end -- bounded: 200
  end
  if #nexts < want and seen < n then more = 1 end
end
return { batches, nexts, more }
