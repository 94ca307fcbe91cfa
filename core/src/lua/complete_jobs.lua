--[[ Complete leased jobs (a worker's acks when it has nothing to fetch; otherwise they ride on
  fetch_jobs). Only the holder of a job's current delivery may complete it; a stale token changes
  nothing. A group's slot is freed; retained completed jobs are trimmed by the queue policy
  (docs/data-model.md).
  KEYS[1] active zset   KEYS[2] done list (retained completed ids, oldest first)   KEYS[3] jobs hash
  KEYS[4] meta hash   KEYS[5] errors hash   KEYS[6] stats hash   KEYS[7] idem zset
  KEYS[8] route hash  KEYS[9] grot list      KEYS[10] gheld set    KEYS[11] gstate hash
  KEYS[12] gcfg hash  KEYS[13] gwait zset   KEYS[14] cfg hash    KEYS[15] gr (group rate-log prefix)
  KEYS[16] wake list   KEYS[17] g (group key prefix)
  KEYS[18] gset set (the groups in the rotation)
  KEYS[19] results hash   KEYS[20] progress hash   KEYS[21] waiters hash
  KEYS[22] fin (prefix of the waiters' notice lists)
  KEYS[23] dd (dedup key prefix)   KEYS[24] dkey hash
  KEYS[25] events stream   KEYS[26] expires zset
  KEYS[27] fparent hash   KEYS[28] fout list   KEYS[29] fk (prefix of flow children's results)
  KEYS[30] fl (prefix of flow children's lists)   KEYS[31] fwait hash
  KEYS[32] attempts hash   KEYS[33] logs hash   KEYS[34] lg (prefix of job log lists)
  KEYS[35] cost hash (id -> cost, for jobs whose cost is not 1)
  ARGV[1] queue policy   ARGV[2], ARGV[3], ...: pairs of job id, lease token (a token ending in "+" is
  followed by the job's result, see docs/data-model.md)
  Returns: array with, per ack, 1 completed, 2 already completed (this delivery's ack sent
  again), or -1 lease lost. ]]
--#include lib/base.lua
--#include lib/policy.lua
--#include lib/cfg.lua
--#include lib/acks.lua
--#K
-- Whether jobs have routes or explicit ids remembered, in one call (this script creates neither).
exist_bits(K, { 'route', 'idem' })
return complete_leases(K, queue_cfg(K), now_ms(), policy(ARGV[1]), 2, true)
