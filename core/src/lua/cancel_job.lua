--[[ Cancel a job. A delayed or ready job is removed with its data at once (its id may be enqueued
  again); its waiters are told. An active one is marked cancel-requested (the cancel set): its
  worker stops it and it ends cancelled when its handler returns, or when its lease expires
  (docs/data-model.md, "Cancel requests"). Dead or finished jobs are not cancelled.
  KEYS[1] ready list   KEYS[2] delayed zset   KEYS[3] jobs hash
  KEYS[4] meta hash ("state|attempts|max|enqueued|x", see docs/data-model.md)   KEYS[5] errors hash
  KEYS[6] stats hash   KEYS[7] active zset   KEYS[8] idem zset   KEYS[9] route hash
  KEYS[10] prio zset   KEYS[11] g (group key prefix)
  KEYS[12] p (priority list key prefix)
  KEYS[13] progress hash   KEYS[14] waiters hash   KEYS[15] fin (prefix of the waiters' notice lists)
  KEYS[16] cancel set
  KEYS[17] dd (dedup key prefix)   KEYS[18] dkey hash
  KEYS[19] cfg hash   KEYS[20] events stream   KEYS[21] ghost hash   KEYS[22] expires zset
  KEYS[23] fwait hash   KEYS[24] fhold zset   KEYS[25] froot hash   KEYS[26] fparent hash
  KEYS[27] fout list   KEYS[28] wake list   KEYS[29] fk (prefix of flow children's results)
  KEYS[30] fl (prefix of flow children's lists)
  ARGV[1] job id
  Returns: { "cancelled", then its children's refs ("<base>\t<id>\t<queue>") when it was a flow
  job waiting for them (the caller cancels them in turn) }, { "requested" } (active: asked to
  stop), or { the state that prevented it: "dead", "completed", "missing" }. A flow job waiting
  for its children, or held, is cancelled as a pending one; its parent is told. ]]
--#include lib/meta.lua
--#include lib/events.lua
--#include lib/dedup.lua
--#include lib/waiters.lua
--#include lib/route.lua
--#include lib/parents.lua
--#K
local id = ARGV[1]
local m = redis.call('HGET', K.meta, id)
if not m then return { 'missing' } end
local s, _, _, enq = parse_meta(m)
s = s or string.sub(m, 1, 1)
if s == 'x' then return { 'dead' } end
if s == 'c' then return { 'completed' } end
-- A flow job waiting for its children, or held, is in no list.
local flowing = redis.call('HEXISTS', K.fwait, id) == 1 or redis.call('ZSCORE', K.fhold, id)
local kids = {}
if flowing then
  redis.call('HDEL', K.fwait, id)
  redis.call('ZREM', K.fhold, id)
  redis.call('HDEL', K.froot, id)
  kids = redis.call('LRANGE', K.fl .. id, 0, -1)
elseif redis.call('ZREM', K.delayed, id) == 0 then
  if redis.call('ZSCORE', K.active, id) then
    redis.call('SADD', K.cancel, id)
    return { 'requested' }
  end
  local r = redis.call('HGET', K.route, id)
  local g = r and select(2, parse_route(r))
  -- A job in the ready list or a priority's list leaves its entry there as a ghost rather than
  -- be searched for (docs/data-model.md, "Cancelled ready jobs").
  if not r then
    redis.call('HINCRBY', K.ghost, 'r|' .. id, 1)
    redis.call('HINCRBY', K.cfg, 'ghosts', 1)
  elseif g == '' then
    local p = parse_route(r)
    redis.call('HINCRBY', K.ghost, 'p' .. p .. '|' .. id, 1)
    redis.call('HINCRBY', K.cfg, 'pghosts', 1)
    redis.call('HINCRBY', K.stats, 'pready', -1)
  elseif g and redis.call('ZREM', K.g .. g, id) == 1 then
    -- An emptied group stays in the rotation until a fetch finds it empty.
    redis.call('HINCRBY', K.stats, 'gready', -1)
  end
end
redis.call('HDEL', K.jobs, id)
redis.call('HDEL', K.meta, id)
redis.call('HDEL', K.errors, id)
redis.call('HDEL', K.route, id)
redis.call('HDEL', K.progress, id)
redis.call('ZREM', K.idem, id)
redis.call('ZREM', K.expires, id)
release_dedup(K, { id })
-- Whoever waits for it learns it was cancelled.
if redis.call('EXISTS', K.waiters) == 1 then notify_waiters(K, { { id, enq or '0', 'n' } }) end
redis.call('HINCRBY', K.stats, 'cancelled', 1)
emit(K, 'cancelled', { id })
tell_parents(K, { id }, { 'n' })
forget_flow(K, { id })
local out = { 'cancelled' }
for i, ref in ipairs(kids) do out[i + 1] = ref end
return out
