--[[ Fail one leased attempt: retry after ARGV[4] ms, or dead-letter the job when its attempts
  reached max; a job whose cancel was requested ends cancelled instead (docs/data-model.md). Only the holder of the current delivery may; anyone else gets -1 (LEASE_LOST) and
  nothing changes. A group's slot is freed.
  KEYS[1] active zset   KEYS[2] ready list   KEYS[3] delayed zset   KEYS[4] dead zset
  KEYS[5] jobs hash     KEYS[6] meta hash    KEYS[7] errors hash    KEYS[8] stats hash
  KEYS[9] wake list     KEYS[10] idem zset   KEYS[11] route hash    KEYS[12] prio zset
  KEYS[13] grot list     KEYS[14] gheld set    KEYS[15] gstate hash   KEYS[16] gcfg hash
  KEYS[17] gwait zset   KEYS[18] cfg hash    KEYS[19] g (group key prefix)
  KEYS[20] gr (group rate-log prefix)
  KEYS[21] gset set (the groups in the rotation)
  KEYS[22] p (priority list key prefix)
  KEYS[23] results hash   KEYS[24] progress hash   KEYS[25] waiters hash
  KEYS[26] fin (prefix of the waiters' notice lists)
  KEYS[27] cancel set
  KEYS[28] dd (dedup key prefix)   KEYS[29] dkey hash
  KEYS[30] events stream   KEYS[31] expires zset
  KEYS[32] fparent hash   KEYS[33] fout list   KEYS[34] fk (prefix of flow children's results)
  KEYS[35] fl (prefix of flow children's lists)   KEYS[36] fwait hash
  KEYS[37] rat hash (when jobs made ready after their enqueue became ready)
  KEYS[38] attempts hash   KEYS[39] logs hash   KEYS[40] lg (prefix of job log lists)
  KEYS[41] cost hash (id -> cost, for jobs whose cost is not 1)
  ARGV[1] job id   ARGV[2] lease token   ARGV[3] error text (already size-capped)
  ARGV[4] retry delay ms   ARGV[5] queue policy (docs/data-model.md)   ARGV[6] "1": dead-letter now
  (the attempt cannot succeed, e.g. an unknown task), whatever its attempts
  ARGV[7] the attempt's run, "<start ms>~<worker id>" (optional: "" or absent, unknown)
  ARGV[8] the handler's trace (optional; already size-capped): with the error, kept in the
  job's attempts (see "Attempts and logs")
  Returns: -1 lease lost, 1 retried, 2 dead-lettered, 3 cancelled. ]]
--#include lib/base.lua
--#include lib/meta.lua
--#include lib/policy.lua
--#include lib/cfg.lua
--#include lib/events.lua
--#include lib/cancel.lua
--#include lib/route.lua
--#include lib/control.lua
--#include lib/bury.lua
--#include lib/attempts.lua
--#K
local id = ARGV[1]
local m = redis.call('HGET', K.meta, id)
if not m then return -1 end
local s, a, mx, enq, x = parse_meta(m)
if s ~= 'q' or token_of(enq, x) ~= ARGV[2] or redis.call('ZREM', K.active, id) == 0 then
  return -1
end
x = tonumber(x) + 1
local now = now_ms()
local C = queue_cfg(K)
local r = routes(K, { id })
local g = r and r[1] and select(2, parse_route(r[1]))
if g and g ~= '' then group_done(K, C, g, now) end
if cancel_requested(K, id) then
  end_cancelled(K, { id }, { enq })
  return 3
end
local att = tonumber(a) + 1
emit(K, 'failed', { id }, { ARGV[3] }, now)
local started, worker = run_of(ARGV[7])
local tb = ARGV[8]
if tb == '' then tb = nil end
add_attempts(K, { { id, { n = att, s = started, e = now, w = worker, o = 'failed', err = ARGV[3],
  tb = tb } } })
if att >= tonumber(mx) or ARGV[6] == '1' then
  bury(K, now, policy(ARGV[5]), { { id, meta_of('x', att, mx, enq, x), ARGV[3] } })
  return 2
end
redis.call('HSET', K.errors, id, ARGV[3])
redis.call('HSET', K.meta, id, meta_of('q', att, mx, enq, x))
local delay = tonumber(ARGV[4])
if delay <= 0 then
  make_ready(K, C, { id }, false, now)
else
  redis.call('ZADD', K.delayed, now + delay, id)
end
redis.call('HINCRBY', K.stats, 'retried', 1)
emit(K, 'retried', { id }, { tostring(math.max(delay, 0)) }, now)
wake(K.wake)
return 1
