-- lib/dead.lua: Choosing the dead jobs a requeue or purge applies to.

-- The dead jobs a requeue or purge applies to: `id` when it is dead, or ("" for all) the oldest
-- `limit`.
local function dead_ids(key, id, limit)
  if id ~= '' then
    if redis.call('ZSCORE', key, id) then return { id } end
    return {}
  end
  return redis.call('ZRANGE', key, 0, limit - 1)
end
