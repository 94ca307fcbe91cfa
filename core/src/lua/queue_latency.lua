#!lua flags=no-writes
--[[ The queue's (shard's) latency, read without writing: how long the job next in line that has
  waited longest to start has been ready (docs/data-model.md, "Latency"), in a bounded number of
  calls however many jobs or groups the queue has. It looks at the first 20 entries of the ready
  list (a released job goes to its front; entries left by cancelled jobs are skipped), the first
  20 of each of the first 10 priorities' lists, the next 10 jobs of each of the first 100 groups
  of the rotation (the groups next in turn; groups held out of it for want of room are not
  counted), and the earliest delayed job if it is due (due but not promoted yet: no worker runs).
  A job is ready since its enqueue, or since when it was made ready later (rat).
  KEYS[1] ready list   KEYS[2] delayed zset   KEYS[3] meta hash   KEYS[4] rat hash
  KEYS[5] prio zset    KEYS[6] p (priority list key prefix)     KEYS[7] grot list
  KEYS[8] g (group key prefix)   KEYS[9] route hash
  ARGV: none
  Returns: { latency ms (0 when no job is ready), now ms }. ]]
--#include lib/base.lua
--#include lib/latency.lua
--#K
-- Only the parts the queue uses: priorities and groups (route), due delayed jobs, records of jobs
-- made ready late (one EXISTS for the three), so a plain queue costs a few calls.
local has = exist_bits(K, { 'route', 'delayed', 'rat' })
if not has.rat then K.rat = nil end
local now = now_ms()
local LIST_LOOK, LEVELS, GROUPS = 20, 10, 100

local ids = redis.call('LRANGE', K.ready, 0, LIST_LOOK - 1)
local groups = {}
if has.route then
  for _, lvl in ipairs(redis.call('ZRANGE', K.prio, 0, LEVELS - 1)) do
    for _, id in ipairs(redis.call('LRANGE', K.p .. lvl, 0, LIST_LOOK - 1)) do ids[#ids + 1] = id end
  end
  groups = redis.call('LRANGE', K.grot, 0, GROUPS - 1)
end
local latency = 0
for _, since in ipairs(ready_since(K, ids)) do
  if since then latency = math.max(latency, now - since) end
end
for _, ms in ipairs(group_latencies(K, groups, now)) do latency = math.max(latency, ms) end
if has.delayed then
  local due = redis.call('ZRANGE', K.delayed, 0, 0, 'WITHSCORES')
  if due[2] and tonumber(due[2]) <= now then latency = math.max(latency, now - tonumber(due[2])) end
end
return { latency, now }
