-- lib/cancel.lua: Ending jobs whose cancel was requested (docs/data-model.md, "Cancel requests").
--#include lib/chunked.lua
--#include lib/dedup.lua
--#include lib/events.lua
--#include lib/forget.lua
--#include lib/waiters.lua
--#include lib/parents.lua

-- Ends jobs taken out of active (their group slots freed) as cancelled: their cancel was
-- requested. `enqs[i]` is the enqueued stamp of `ids[i]` (for its waiters' notices). Their data,
-- idempotency entries and requests are deleted; counted as cancelled; their waiters are told.
local function end_cancelled(K, ids, enqs)
  if #ids == 0 then return end
  -- Their parents are told first: forgetting them drops their flow records.
  tell_parents_all(K, ids, 'n')
  forget(K, ids)
  chunked('ZREM', K.idem, ids)
  chunked('SREM', K.cancel, ids)
  release_dedup(K, ids)
  redis.call('HINCRBY', K.stats, 'cancelled', #ids)
  emit(K, 'cancelled', ids)
  if not K.no_waiters and redis.call('EXISTS', K.waiters) == 1 then
    local done = {}
    for i, id in ipairs(ids) do done[i] = { id, enqs[i] or '0', 'n' } end
    notify_waiters(K, done)
  end
end

-- Whether the cancel of active job `id` was requested (docs/data-model.md, "Cancel requests").
local function cancel_requested(K, id)
  return redis.call('SISMEMBER', K.cancel, id) == 1
end
