--[[ Requeue or purge dead-lettered jobs, at most ARGV[3] per call (the client loops). (lib_jobs.lua is put in front.)
  KEYS[1] dead zset   KEYS[2] ready list   KEYS[3] jobs hash
  KEYS[4] meta hash ("state|attempts|max|enqueued|x", see lib_jobs.lua)   KEYS[5] errors hash
  KEYS[6] stats hash  KEYS[7] wake list
  ARGV[1] "requeue" | "purge"   ARGV[2] job id, or "" for all   ARGV[3] most jobs this call
  Returns: number of jobs requeued or purged (0 when the id is not dead). ]]
local ids
if ARGV[2] ~= '' then
  if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
  ids = { ARGV[2] }
else
  ids = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[3]) - 1)
end
if #ids == 0 then return 0 end
redis.call('ZREM', KEYS[1], unpack(ids))
if ARGV[1] == 'requeue' then
  for _, id in ipairs(ids) do
    -- Attempts start again; deliveries ended (x) go on counting, so old lease tokens stay stale.
    local _, _, mx, enq, x = parse_meta(redis.call('HGET', KEYS[4], id) or 'x|0|1|0|0')
    redis.call('HSET', KEYS[4], id, meta_of('q', 0, mx, enq, x))
    redis.call('RPUSH', KEYS[2], id)
  end
  redis.call('HINCRBY', KEYS[6], 'requeued', #ids)
  wake(KEYS[7])
else
  redis.call('HDEL', KEYS[3], unpack(ids))
  redis.call('HDEL', KEYS[4], unpack(ids))
  redis.call('HDEL', KEYS[5], unpack(ids))
end
return #ids
