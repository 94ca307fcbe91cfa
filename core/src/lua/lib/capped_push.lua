-- lib/capped_push.lua: appending to capped groups (push_capped.lua, requeue_capped.lua).

-- Appends `item` to the group list `key`, stamped, and drops its oldest items above `cap`;
-- notes in touched[gi] whether this call found the group empty. Returns how many it dropped.
local function capped_append(key, gi, item, stamp, cap, touched)
  local len = redis.call('RPUSH', key, stamp .. item)
  if touched[gi] == nil then touched[gi] = (len == 1) end
  if len > cap then
    redis.call('LTRIM', key, len - cap, -1)
    return len - cap
  end
  return 0
end

-- The groups appended to (touched: index -> found empty; group i's list is KEYS[base + 2i], its
-- wake list KEYS[base + 1 + 2i], its name ARGV[3 + i]): their TTL refreshed, each live and in the
-- rotation, and consumers woken where a group went from empty to non-empty or became live.
local function capped_touched(touched, base, ttl, now)
  local expiry = '+inf'
  if ttl > 0 then expiry = now + ttl end
  local woke = false
  for gi, was_empty in pairs(touched) do
    local key = KEYS[base + 2 * gi]
    if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
    local name = ARGV[3 + gi]
    local new = redis.call('ZADD', KEYS[3], expiry, name) == 1
    if redis.call('SADD', KEYS[2], name) == 1 then redis.call('RPUSH', KEYS[1], name) end
    if was_empty or new then
      local gw = KEYS[base + 1 + 2 * gi]
      redis.call('RPUSH', gw, '1')
      redis.call('LTRIM', gw, -16, -1)
      redis.call('PEXPIRE', gw, 60000)
      woke = true
    end
  end
  if woke then
    redis.call('RPUSH', KEYS[5], '1')
    redis.call('LTRIM', KEYS[5], -64, -1)
    redis.call('PEXPIRE', KEYS[5], 60000)
  end
end
