-- lib/forget.lua: Deleting jobs' data.
--#include lib/base.lua
--#include lib/chunked.lua
--#include lib/parents.lua
--#include lib/attempts.lua

-- Deletes jobs' data (envelope, meta, last error, route, cost, result, progress, attempts, log).
local function forget(K, ids)
  if #ids == 0 then return end
  -- A dead job's record of its dedup key (see release_dedup) goes with it.
  if K.dkey and not K.no_dedup then chunked('HDEL', K.dkey, ids) end
  chunked('HDEL', K.jobs, ids)
  chunked('HDEL', K.meta, ids)
  chunked('HDEL', K.errors, ids)
  if K.route and key_exists(K, 'route') then chunked('HDEL', K.route, ids) end
  if K.cost and not K.no_costs and key_exists(K, 'cost') then chunked('HDEL', K.cost, ids) end
  drop_expiry(K, ids)
  forget_flow(K, ids)
  if not K.no_results then chunked('HDEL', K.results, ids) end
  if not K.no_progress then chunked('HDEL', K.progress, ids) end
  forget_attempts(K, ids)
end
