-- lib/policy.lua: The queue policy ARGV "keep|keepfor|keepdead|keepdeadfor|idem|idemmax" (docs/data-model.md,
-- "Queue policy"); written by `QueueOptions::policy` (job.rs).

local function policy(p)
  local keep, keepfor, keepdead, keepdeadfor, idem, idemmax =
    string.match(p, '^(%d+)|(%d+)|(%-?%d+)|(%d+)|(%d+)|(%d+)$')
  if not keep then error('tideq: bad queue policy ' .. tostring(p)) end
  return { keep = tonumber(keep), keepfor = tonumber(keepfor), keepdead = tonumber(keepdead),
    keepdeadfor = tonumber(keepdeadfor), idem = tonumber(idem), idemmax = tonumber(idemmax) }
end
