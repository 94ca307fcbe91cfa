--[[ Cancel jobs: one (`cancel`), or a page of a cancelled parent's children. A delayed or ready
  job is removed with its data at once (its id may be enqueued again); its waiters are told. An
  active one is marked cancel-requested (the cancel set): its worker stops it and it ends
  cancelled when its handler returns, or when its lease expires (docs/data-model.md, "Cancel
  requests"). Dead or finished jobs are not cancelled. A flow job waiting for its children, or
  held, is cancelled as a pending one; its parent is told; its children's list is left in
  `fs:<token>.<i>` for the caller to cancel them in turn, a page at a time.
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
  KEYS[30] fl (prefix of flow children's lists)   KEYS[31] fs (prefix of children's lists in
  transit)
  KEYS[32] rat hash (when jobs made ready after their enqueue became ready)
  KEYS[33] attempts hash   KEYS[34] logs hash   KEYS[35] lg (prefix of job log lists)
  KEYS[36] cost hash (id -> cost, for jobs whose cost is not 1)
  ARGV[1] a token of this call's own, then the job ids (at most 1000)
  Returns: per id two values: what happened ("cancelled", "requested": active, asked to stop, or
  the state that prevented it: "dead", "completed", "missing"), and for a cancelled flow job
  waiting for its children how many there are, listed in `fs:<token>.<i>` (i: the id's place,
  from 1; the list expires after 10 minutes), else 0. ]]
--#include lib/chunked.lua
--#include lib/meta.lua
--#include lib/events.lua
--#include lib/dedup.lua
--#include lib/waiters.lua
--#include lib/route.lua
--#include lib/parents.lua
--#include lib/attempts.lua
--#K
local token = ARGV[1]
local out, done, enqs, seen = {}, {}, {}, {}
for i = 2, #ARGV do
  local id = ARGV[i]
  local m = not seen[id] and redis.call('HGET', K.meta, id)
  seen[id] = true
  local s, _, _, enq
  if m then
    s, _, _, enq = parse_meta(m)
    s = s or string.sub(m, 1, 1)
  end
  local kids = 0
  if not m then
    out[#out + 1] = 'missing'
  elseif s == 'x' then
    out[#out + 1] = 'dead'
  elseif s == 'c' then
    out[#out + 1] = 'completed'
  elseif redis.call('HEXISTS', K.fwait, id) == 1 or redis.call('ZSCORE', K.fhold, id) then
    -- A flow job waiting for its children, or held, is in no list.
    redis.call('HDEL', K.fwait, id)
    redis.call('ZREM', K.fhold, id)
    redis.call('HDEL', K.froot, id)
    local list = K.fs .. token .. '.' .. (i - 1)
    if redis.call('EXISTS', K.fl .. id) == 1 then
      redis.call('RENAME', K.fl .. id, list)
      redis.call('PEXPIRE', list, 600000)
      kids = redis.call('LLEN', list)
    end
    out[#out + 1] = 'cancelled'
  elseif redis.call('ZREM', K.delayed, id) == 1 then
    out[#out + 1] = 'cancelled'
  elseif redis.call('ZSCORE', K.active, id) then
    redis.call('SADD', K.cancel, id)
    out[#out + 1] = 'requested'
  else
    local r = redis.call('HGET', K.route, id)
    local g = r and select(2, parse_route(r))
    -- A job in the ready list or a priority's list leaves its entry there as a ghost rather
    -- than be searched for (docs/data-model.md, "Cancelled ready jobs").
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
    out[#out + 1] = 'cancelled'
  end
  out[#out + 1] = kids
  if out[#out - 1] == 'cancelled' then
    done[#done + 1] = id
    enqs[#done] = enq or '0'
  end
end
if #done == 0 then return out end
chunked('HDEL', K.jobs, done)
chunked('HDEL', K.meta, done)
chunked('HDEL', K.errors, done)
chunked('HDEL', K.route, done)
chunked('HDEL', K.progress, done)
chunked('HDEL', K.rat, done)
chunked('HDEL', K.cost, done)
chunked('ZREM', K.idem, done)
chunked('ZREM', K.expires, done)
release_dedup(K, done)
-- Whoever waits for them learns they were cancelled.
if redis.call('EXISTS', K.waiters) == 1 then
  local told = {}
  for i, id in ipairs(done) do told[i] = { id, enqs[i], 'n' } end
  notify_waiters(K, told)
end
redis.call('HINCRBY', K.stats, 'cancelled', #done)
emit(K, 'cancelled', done)
tell_parents_all(K, done, 'n')
forget_flow(K, done)
forget_attempts(K, done)
return out
