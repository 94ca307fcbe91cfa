-- lib/active.lua: Leasing into the active zset, which keeps ANCHOR (docs/data-model.md, "Active zset").
--#include lib/chunked.lua

-- The member's text is stored data: it stays as it is (its "lib_jobs.lua" included).
local ANCHOR = '\0tideq: keeps this zset in skiplist encoding; never a job id (see lib_jobs.lua)'

-- Leases `ids` until `deadline` (a string) in the active zset (ANCHOR included).
local function add_active(key, deadline, ids)
  local args = { '+inf', ANCHOR }
  for _, id in ipairs(ids) do
    args[#args + 1] = deadline
    args[#args + 1] = id
  end
  chunked('ZADD', key, args)
end
