--[[ Requeue dead-lettered jobs: back to the ready list with their attempts reset, at most ARGV[2]
  per call (the client loops).
  KEYS[1] dead zset   KEYS[2] ready list   KEYS[3] meta hash   KEYS[4] stats hash
  KEYS[5] wake list
  ARGV[1] job id, or "" for all   ARGV[2] most jobs this call
  Returns: number of jobs requeued (0 when the id is not dead). ]]
--#include lib_jobs.lua
local ids = dead_ids(KEYS[1], ARGV[1], tonumber(ARGV[2]))
if #ids == 0 then return 0 end
redis.call('ZREM', KEYS[1], unpack(ids))
for _, id in ipairs(ids) do
  -- Attempts start again; deliveries ended (x) go on counting, so old lease tokens stay stale.
  local _, _, mx, enq, x = parse_meta(redis.call('HGET', KEYS[3], id) or 'x|0|1|0|0')
  redis.call('HSET', KEYS[3], id, meta_of('q', 0, mx, enq, x))
  redis.call('RPUSH', KEYS[2], id)
end
redis.call('HINCRBY', KEYS[4], 'requeued', #ids)
wake(KEYS[5])
return #ids
