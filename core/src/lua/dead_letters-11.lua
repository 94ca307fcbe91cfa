--[[ Requeue or purge dead-lettered jobs, at most ARGV[3] per call (the client loops).
  KEYS[1] dead zset   KEYS[2] ready list   KEYS[3] jobs hash   KEYS[4] state hash
  KEYS[5] attempts hash   KEYS[6] tokens hash   KEYS[7] max-attempts hash   KEYS[8] errors hash
  KEYS[9] enqueued-at hash   KEYS[10] stats hash   KEYS[11] wake list
  ARGV[1] "requeue" | "purge"   ARGV[2] job id, or "" for all   ARGV[3] most jobs this call
  Returns: number of jobs requeued or purged (0 when the id is not dead). ]]
local ids
if ARGV[2] ~= '' then
  if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
  ids = { ARGV[2] }
else
  ids = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[3]) - 1)
end
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[1], id)
  if ARGV[1] == 'requeue' then
    redis.call('HSET', KEYS[5], id, 0)
    redis.call('RPUSH', KEYS[2], id)
    redis.call('HSET', KEYS[4], id, 'r')
  else
    for k = 3, 9 do redis.call('HDEL', KEYS[k], id) end
  end
end
if #ids > 0 and ARGV[1] == 'requeue' then
  redis.call('HINCRBY', KEYS[10], 'requeued', #ids)
  redis.call('RPUSH', KEYS[11], '1')
  redis.call('LTRIM', KEYS[11], -64, -1)
  redis.call('PEXPIRE', KEYS[11], 60000)
end
return #ids
