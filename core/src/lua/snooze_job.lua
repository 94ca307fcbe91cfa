--[[ Snooze one leased job, or back off: the handler asked for the job to run again later. The
  attempt is not counted (attempts, and so the backoff of a later failure, are as if this
  delivery never happened), no error is recorded, and the job waits ARGV[3] ms (0: it is ready
  again at once, at the back of its queue). Back-off (ARGV[4] "q" or "g") also holds the whole
  queue (this shard) or the job's group for ARGV[3] ms: nothing of it starts until then, and the
  job itself waits at the front of its queue, not in the delayed set (docs/data-model.md, "Flow
  control"). With ARGV[1] "" there is no job: the queue (this shard) backs off only (a sharded
  queue's back-off reaches every shard). A job whose cancel was requested ends cancelled instead.
  Only the holder of the current delivery may; anyone else gets -1 (LEASE_LOST) and nothing
  changes. A group's slot is freed.
  KEYS[1] active zset   KEYS[2] ready list   KEYS[3] delayed zset   KEYS[4] meta hash
  KEYS[5] wake list     KEYS[6] stats hash   KEYS[7] route hash     KEYS[8] prio zset
  KEYS[9] grot list      KEYS[10] gheld set   KEYS[11] gstate hash   KEYS[12] gcfg hash
  KEYS[13] gwait zset   KEYS[14] cfg hash    KEYS[15] g (group key prefix)
  KEYS[16] gr (group rate-log prefix)   KEYS[17] gset set (the groups in the rotation)
  KEYS[18] p (priority list key prefix)   KEYS[19] cancel set   KEYS[20] jobs hash
  KEYS[21] errors hash  KEYS[22] idem zset   KEYS[23] results hash   KEYS[24] progress hash
  KEYS[25] waiters hash  KEYS[26] fin (prefix of the waiters' notice lists)
  KEYS[27] dd (dedup key prefix)   KEYS[28] dkey hash
  KEYS[29] events stream   KEYS[30] expires zset
  KEYS[31] fparent hash   KEYS[32] fout list   KEYS[33] fk (prefix of flow children's results)
  KEYS[34] fl (prefix of flow children's lists)   KEYS[35] fwait hash
  KEYS[36] rat hash (when jobs made ready after their enqueue became ready)
  KEYS[37] attempts hash   KEYS[38] logs hash   KEYS[39] lg (prefix of job log lists)
  KEYS[40] cost hash (id -> cost, for jobs whose cost is not 1)
  ARGV[1] job id ("": back off only)   ARGV[2] lease token   ARGV[3] delay ms
  ARGV[4] "": snooze, "q": back off the queue, "g": back off the job's group (a job without a
  group: the queue)
  Returns: 1 snoozed, 3 cancelled, -1 lease lost. ]]
--#include lib/base.lua
--#include lib/meta.lua
--#include lib/cfg.lua
--#include lib/events.lua
--#include lib/cancel.lua
--#include lib/route.lua
--#include lib/control.lua
--#K
local id, delay, scope = ARGV[1], tonumber(ARGV[3]), ARGV[4]
local now = now_ms()

-- Nothing of the queue (this shard) starts before `now + delay` (a later back-off stands).
local function hold_queue()
  local cur = tonumber(redis.call('HGET', K.cfg, 'until') or '0')
  if now + delay > cur then redis.call('HSET', K.cfg, 'until', now + delay) end
end

if id == '' then
  hold_queue()
  return 1
end
local m = redis.call('HGET', K.meta, id)
if not m then return -1 end
local s, a, mx, enq, x = parse_meta(m)
if s ~= 'q' or token_of(enq, x) ~= ARGV[2] or redis.call('ZREM', K.active, id) == 0 then
  return -1
end
local C = queue_cfg(K)
local r = routes(K, { id })
local g = r and r[1] and select(2, parse_route(r[1]))
if g == '' then g = nil end
if g then group_done(K, C, g, now) end
if cancel_requested(K, id) then
  end_cancelled(K, { id }, { enq })
  return 3
end
-- The delivery ends (its token is void), its attempt uncounted.
redis.call('HSET', K.meta, id, meta_of('q', a, mx, enq, tonumber(x) + 1))
if scope == 'g' and g then
  local f = 'until:' .. g
  local cur = tonumber(redis.call('HGET', K.gcfg, f) or '0')
  if now + delay > cur then redis.call('HSET', K.gcfg, f, now + delay) end
  -- Its settings changed: read them again (the group is held until then, see group_room).
  C.limited, C.gc[g] = true, nil
  make_ready(K, C, { id }, true, now)
elseif scope ~= '' then
  hold_queue()
  make_ready(K, C, { id }, true, now)
elseif delay <= 0 then
  make_ready(K, C, { id }, false, now)
else
  redis.call('ZADD', K.delayed, now + delay, id)
end
redis.call('HINCRBY', K.stats, 'snoozed', 1)
emit(K, 'snoozed', { id }, { ARGV[3] }, now)
wake(K.wake)
return 1
