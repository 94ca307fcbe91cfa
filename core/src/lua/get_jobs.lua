#!lua flags=no-writes
--[[ Read jobs as `get`, `jobs` and `dead_letters` report them, atomically and without writing,
  so it works on a Redis at maxmemory (a MULTI transaction is refused there).
  KEYS[1] jobs hash   KEYS[2] meta hash   KEYS[3] errors hash   KEYS[4] delayed zset
  KEYS[5] active zset KEYS[6] dead zset   KEYS[7] route hash  KEYS[8] results hash
  KEYS[9] progress hash   KEYS[10] fwait hash   KEYS[11] fparent hash   KEYS[12] fhold zset
  KEYS[13] cost hash
  ARGV[1], ARGV[2], ...: job ids
  Returns: per id { envelope, meta, last error, delayed score, active score, dead score, route,
  result, progress, children pending (a flow job waiting for them), parent notice head (a flow
  child, see lib/parents.lua), held score (a flow job not released yet), cost (when not 1) },
  each nil when absent. ]]
local out = {}
local costs = redis.call('EXISTS', KEYS[13]) == 1
for i, id in ipairs(ARGV) do
  out[i] = { redis.call('HGET', KEYS[1], id), redis.call('HGET', KEYS[2], id),
    redis.call('HGET', KEYS[3], id), redis.call('ZSCORE', KEYS[4], id),
    redis.call('ZSCORE', KEYS[5], id), redis.call('ZSCORE', KEYS[6], id),
    redis.call('HGET', KEYS[7], id), redis.call('HGET', KEYS[8], id),
    redis.call('HGET', KEYS[9], id), redis.call('HGET', KEYS[10], id),
    redis.call('HGET', KEYS[11], id), redis.call('ZSCORE', KEYS[12], id),
    costs and redis.call('HGET', KEYS[13], id) }
end
return out
