--[[ Delete one finished job (dead or completed) and everything kept for it: its entry in the dead
  set or the done list, its envelope, meta, last error, route, result, progress, dedup record,
  flow records and its id in the idempotency memory (as purge_dead.lua does for dead jobs), so
  its id may be enqueued again. Lifetime counters are not touched. A pending or running job is
  not deleted (it is cancelled instead).
  Cost: O(log n) for a dead job; for a completed one an LREM of the done list, O(its length),
  which the queue's keep_completed bounds.
  KEYS[1] dead zset   KEYS[2] done list   KEYS[3] jobs hash   KEYS[4] meta hash
  KEYS[5] errors hash   KEYS[6] idem zset   KEYS[7] progress hash   KEYS[8] route hash
  KEYS[9] dkey hash   KEYS[10] results hash   KEYS[11] expires zset   KEYS[12] cfg hash
  KEYS[13] fk (prefix of flow children's results)   KEYS[14] fl (prefix of flow children's lists)
  KEYS[15] fwait hash   KEYS[16] fparent hash   KEYS[17] delayed zset   KEYS[18] active zset
  KEYS[19] fhold zset
  KEYS[20] attempts hash   KEYS[21] logs hash   KEYS[22] lg (prefix of job log lists)
  KEYS[23] cost hash (id -> cost, for jobs whose cost is not 1)
  ARGV[1] job id
  Returns: "deleted", or the state that prevented it: "delayed", "ready", "active", "waiting"
  (a flow job waiting for its children, or held), "missing". ]]
--#include lib/meta.lua
--#include lib/cfg.lua
--#include lib/forget.lua
--#K
local id = ARGV[1]
local m = redis.call('HGET', K.meta, id)
if not m then return 'missing' end
local s = parse_meta(m) or string.sub(m, 1, 1)
if s == 'x' then
  redis.call('ZREM', K.dead, id)
elseif s == 'c' then
  redis.call('LREM', K.done, 1, id) -- bounded: the done list holds at most keep_completed ids
else
  if redis.call('HEXISTS', K.fwait, id) == 1 or redis.call('ZSCORE', K.fhold, id) then
    return 'waiting'
  end
  if redis.call('ZSCORE', K.delayed, id) then return 'delayed' end
  if redis.call('ZSCORE', K.active, id) then return 'active' end
  return 'ready'
end
queue_cfg(K)
redis.call('ZREM', K.idem, id)
forget(K, { id })
return 'deleted'
