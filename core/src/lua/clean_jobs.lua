--[[ Delete finished jobs of one state in one call (`clean`): as delete_job.lua does for one job
  (its place in the dead set or the done list, its data, result, progress, flow records, dedup
  record, and its id in the idempotency memory), for up to 250 ids the caller read as finished
  long enough ago. An id no longer in that state (retried, deleted meanwhile) is skipped.
  Completed ids are the front of the done list, oldest first: the matching front is trimmed in
  one LTRIM, and any other id removed by LREM (bounded by keep_completed).
  KEYS[1] dead zset   KEYS[2] done list   KEYS[3] jobs hash   KEYS[4] meta hash
  KEYS[5] errors hash   KEYS[6] idem zset   KEYS[7] progress hash   KEYS[8] route hash
  KEYS[9] dkey hash   KEYS[10] results hash   KEYS[11] expires zset   KEYS[12] cfg hash
  KEYS[13] fk (prefix of flow children's results)   KEYS[14] fl (prefix of flow children's lists)
  KEYS[15] fwait hash   KEYS[16] fparent hash
  KEYS[17] attempts hash   KEYS[18] logs hash   KEYS[19] lg (prefix of job log lists)
  KEYS[20] cost hash (id -> cost, for jobs whose cost is not 1)
  ARGV[1] the state: "c" completed, "x" dead   ARGV[2..] job ids (at most 250)
  Returns: how many were deleted. ]]
--#include lib/chunked.lua
--#include lib/meta.lua
--#include lib/cfg.lua
--#include lib/forget.lua
--#K
local want = ARGV[1]
local ids = {}
for i = 2, #ARGV do ids[#ids + 1] = ARGV[i] end
if #ids == 0 then return 0 end
local metas = chunked_read('HMGET', K.meta, ids)
local gone = {}
for i, id in ipairs(ids) do
  local m = metas[i]
  if m and (parse_meta(m) or string.sub(m, 1, 1)) == want then gone[#gone + 1] = id end
end
if #gone == 0 then return 0 end
if want == 'x' then
  chunked('ZREM', K.dead, gone)
else
  local front = redis.call('LRANGE', K.done, 0, #gone - 1)
  local n = 0
  while n < #front and front[n + 1] == gone[n + 1] do n = n + 1 end
  if n > 0 then redis.call('LTRIM', K.done, n, -1) end
  -- bounded: the done list holds at most keep_completed ids
  for i = n + 1, #gone do redis.call('LREM', K.done, 1, gone[i]) end
end
queue_cfg(K)
chunked('ZREM', K.idem, gone)
forget(K, gone)
return #gone
