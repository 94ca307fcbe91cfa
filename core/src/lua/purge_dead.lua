--[[ Delete dead-lettered jobs and their data, at most ARGV[2] per call (the client loops); their
  ids may be enqueued again.
  KEYS[1] dead zset   KEYS[2] jobs hash   KEYS[3] meta hash   KEYS[4] errors hash
  KEYS[5] idem zset   KEYS[6] progress hash   KEYS[7] route hash   KEYS[8] dkey hash
  KEYS[9] fk (prefix of flow children's results)   KEYS[10] fl (prefix of flow children's lists)
  KEYS[11] fparent hash
  KEYS[12] attempts hash   KEYS[13] logs hash   KEYS[14] lg (prefix of job log lists)
  KEYS[15] cost hash
  ARGV[1] job id, or "" for all   ARGV[2] most jobs this call
  Returns: number of jobs purged (0 when the id is not dead). ]]
--#include lib/chunked.lua
--#include lib/dead.lua
--#include lib/attempts.lua
--#K
local ids = dead_ids(KEYS[1], ARGV[1], tonumber(ARGV[2]))
if #ids == 0 then return 0 end
chunked('ZREM', KEYS[1], ids)
chunked('HDEL', KEYS[2], ids)
chunked('HDEL', KEYS[3], ids)
chunked('HDEL', KEYS[4], ids)
chunked('ZREM', KEYS[5], ids)
chunked('HDEL', KEYS[6], ids)
-- A dead job keeps its route (priority, group) for a requeue; purged, it goes, so a queue whose
-- grouped jobs are all gone stops paying for queue control.
chunked('HDEL', KEYS[7], ids)
-- Nor does it keep the record of its dedup key (kept while dead for a requeue).
chunked('HDEL', KEYS[8], ids)
-- And its cost, kept while dead for a requeue.
chunked('HDEL', KEYS[15], ids)
-- A dead flow job's records (its parent was told when it died).
chunked('HDEL', KEYS[11], ids)
local keys = {}
for _, id in ipairs(ids) do
  keys[#keys + 1] = KEYS[9] .. id
  keys[#keys + 1] = KEYS[10] .. id
end
for i = 1, #keys, 1000 do redis.call('DEL', unpack(keys, i, math.min(i + 999, #keys))) end
-- Their attempts and logs.
forget_attempts(K, ids)
return #ids
