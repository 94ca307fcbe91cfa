--[[ Cancel a delayed or ready job: remove it and its data (its id may be enqueued again). Active,
  dead or finished jobs are not cancelled.
  KEYS[1] ready list   KEYS[2] delayed zset   KEYS[3] jobs hash
  KEYS[4] meta hash ("state|attempts|max|enqueued|x", see lib_jobs.lua)   KEYS[5] errors hash
  KEYS[6] stats hash   KEYS[7] active zset   KEYS[8] idem zset
  ARGV[1] job id
  Returns: "cancelled", or the state that prevented it: "active", "dead", "completed", "missing". ]]
local id = ARGV[1]
local m = redis.call('HGET', KEYS[4], id)
if not m then return 'missing' end
local s = string.sub(m, 1, 1)
if s == 'x' then return 'dead' end
if s == 'c' then return 'completed' end
if redis.call('ZREM', KEYS[2], id) == 0 then
  if redis.call('ZSCORE', KEYS[7], id) then return 'active' end
  redis.call('LREM', KEYS[1], 1, id)
end
redis.call('HDEL', KEYS[3], id)
redis.call('HDEL', KEYS[4], id)
redis.call('HDEL', KEYS[5], id)
redis.call('ZREM', KEYS[8], id)
redis.call('HINCRBY', KEYS[6], 'cancelled', 1)
return 'cancelled'
