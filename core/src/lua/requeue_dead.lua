--[[ Requeue dead-lettered jobs: back to their queues with their attempts reset, and their dedup
  keys (those held until the job finishes) held again while no other pending job holds them, at
  most ARGV[2] per call (the client loops). A record that does not parse keeps its attempt limit at 1.
  KEYS[1] dead zset   KEYS[2] ready list   KEYS[3] meta hash   KEYS[4] stats hash
  KEYS[5] wake list   KEYS[6] idem zset    KEYS[7] route hash  KEYS[8] prio zset
  KEYS[9] grot list    KEYS[10] gheld set    KEYS[11] gstate hash KEYS[12] gcfg hash
  KEYS[13] gwait zset KEYS[14] cfg hash    KEYS[15] g (group key prefix)
  KEYS[16] gr (group rate-log prefix)
  KEYS[17] gset set (the groups in the rotation)
  KEYS[18] p (priority list key prefix)
  KEYS[19] dd (dedup key prefix)   KEYS[20] dkey hash
  KEYS[21] rat hash (when jobs made ready after their enqueue became ready)
  ARGV[1] job id, or "" for all   ARGV[2] most jobs this call
  Returns: number of jobs requeued (0 when the id is not dead). ]]
--#include lib/chunked.lua
--#include lib/base.lua
--#include lib/meta.lua
--#include lib/cfg.lua
--#include lib/dedup.lua
--#include lib/control.lua
--#include lib/dead.lua
--#K
local ids = dead_ids(K.dead, ARGV[1], tonumber(ARGV[2]))
if #ids == 0 then return 0 end
local metas = hmget(K.meta, ids)
local meta, idem = {}, {}
for i, id in ipairs(ids) do
  -- Attempts start again; deliveries ended (x) go on counting, so old lease tokens stay stale.
  local _, _, mx, enq, x = parse_meta(metas[i] or '')
  if not mx then mx, enq, x = '1', '0', '0' end
  meta[#meta + 1] = id
  meta[#meta + 1] = meta_of('q', 0, mx, enq, x)
  idem[#idem + 1] = '+inf'
  idem[#idem + 1] = id
end
chunked('ZREM', K.dead, ids)
chunked('HSET', K.meta, meta)
local C = queue_cfg(K)
-- Pending again, a job holds its dedup key again (docs/data-model.md, "Dedup and debounce").
take_dedup(K, ids)
make_ready(K, C, ids, false, now_ms())
if redis.call('EXISTS', K.idem) == 1 then
  for i = 1, #idem, 1000 do
    redis.call('ZADD', K.idem, 'XX', unpack(idem, i, math.min(i + 999, #idem)))
  end
end
redis.call('HINCRBY', K.stats, 'requeued', #ids)
wake(K.wake)
return #ids
