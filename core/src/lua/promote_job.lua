--[[ Run one delayed job now (an operator's "run now"): a job waiting for its due time, a retry's
  backoff or a snooze leaves the delayed set and becomes ready at once, as a due delayed job does
  in fetch_jobs.lua (make_ready: its priority and group apply, and the group's and queue's limits
  when a worker fetches it). Its attempts, deadline to start and data are kept. Idle workers are
  woken as by an enqueue. Any other state changes nothing.
  KEYS[1] ready list   KEYS[2] delayed zset   KEYS[3] meta hash   KEYS[4] stats hash
  KEYS[5] wake list    KEYS[6] route hash     KEYS[7] prio zset   KEYS[8] grot list
  KEYS[9] gheld set    KEYS[10] gstate hash   KEYS[11] gcfg hash  KEYS[12] gwait zset
  KEYS[13] cfg hash    KEYS[14] g (group key prefix)   KEYS[15] gr (group rate-log prefix)
  KEYS[16] gset set (the groups in the rotation)   KEYS[17] p (priority list key prefix)
  KEYS[18] active zset   KEYS[19] fwait hash   KEYS[20] fhold zset
  KEYS[21] rat hash (when jobs made ready after their enqueue became ready)
  ARGV[1] job id
  Returns: "promoted", or the state that prevented it: "ready", "active", "dead", "completed",
  "waiting" (a flow job waiting for its children, or held), "missing". ]]
--#include lib/base.lua
--#include lib/meta.lua
--#include lib/cfg.lua
--#include lib/control.lua
--#K
local id = ARGV[1]
local m = redis.call('HGET', K.meta, id)
if not m then return 'missing' end
local s = parse_meta(m) or string.sub(m, 1, 1)
if s == 'x' then return 'dead' end
if s == 'c' then return 'completed' end
if redis.call('HEXISTS', K.fwait, id) == 1 or redis.call('ZSCORE', K.fhold, id) then
  return 'waiting'
end
if redis.call('ZREM', K.delayed, id) == 0 then
  if redis.call('ZSCORE', K.active, id) then return 'active' end
  return 'ready'
end
make_ready(K, queue_cfg(K), { id }, false, now_ms())
wake(K.wake)
return 'promoted'
