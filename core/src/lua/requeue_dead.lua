--[[ Requeue dead-lettered jobs: back to the ready list with their attempts reset, at most ARGV[2]
  per call (the client loops). A record that does not parse keeps its attempt limit at 1.
  KEYS[1] dead zset   KEYS[2] ready list   KEYS[3] meta hash   KEYS[4] stats hash
  KEYS[5] wake list   KEYS[6] idem zset
  ARGV[1] job id, or "" for all   ARGV[2] most jobs this call
  Returns: number of jobs requeued (0 when the id is not dead). ]]
--#include lib_jobs.lua
local ids = dead_ids(KEYS[1], ARGV[1], tonumber(ARGV[2]))
if #ids == 0 then return 0 end
local metas = hmget(KEYS[3], ids)
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
redis.call('ZREM', KEYS[1], unpack(ids))
chunked('HSET', KEYS[3], meta)
chunked('RPUSH', KEYS[2], ids)
if redis.call('EXISTS', KEYS[6]) == 1 then
  for i = 1, #idem, 1000 do
    redis.call('ZADD', KEYS[6], 'XX', unpack(idem, i, math.min(i + 999, #idem)))
  end
end
redis.call('HINCRBY', KEYS[4], 'requeued', #ids)
wake(KEYS[5])
return #ids
