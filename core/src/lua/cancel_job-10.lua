--[[ Cancel a delayed or ready job: remove it and its data. Active, dead or finished jobs are not
  cancelled.
  KEYS[1] ready list   KEYS[2] delayed zset   KEYS[3] jobs hash   KEYS[4] state hash
  KEYS[5] attempts hash   KEYS[6] tokens hash   KEYS[7] max-attempts hash   KEYS[8] errors hash
  KEYS[9] enqueued-at hash   KEYS[10] stats hash
  ARGV[1] job id
  Returns: "cancelled", or the state that prevented it: "active", "dead", "completed", "missing". ]]
local id = ARGV[1]
local st = redis.call('HGET', KEYS[4], id)
if not st then return 'missing' end
if st == 'a' then return 'active' end
if st == 'x' then return 'dead' end
if st == 'c' then return 'completed' end
if st == 'd' then
  redis.call('ZREM', KEYS[2], id)
else
  redis.call('LREM', KEYS[1], 1, id)
end
for k = 3, 9 do redis.call('HDEL', KEYS[k], id) end
redis.call('HINCRBY', KEYS[10], 'cancelled', 1)
return 'cancelled'
