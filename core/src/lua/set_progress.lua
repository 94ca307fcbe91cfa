--[[ Store a running job's progress: only the holder of the current delivery may (fenced by the
  lease token, as extend_lease.lua). The value replaces the previous one and goes with the job's
  data (docs/data-model.md, "Results and progress").
  KEYS[1] active zset   KEYS[2] meta hash   KEYS[3] progress hash   KEYS[4] cfg hash (its
  KEYS[5] stats hash   KEYS[6] events stream
  `progress` field says the queue has some, see docs/data-model.md)
  ARGV[1] job id   ARGV[2] lease token   ARGV[3] progress (already size-capped)
  Returns: 1 stored, or -1 when the lease was lost (expired and recovered). ]]
--#include lib/meta.lua
--#include lib/events.lua
local m = redis.call('HGET', KEYS[2], ARGV[1])
if not m then return -1 end
local s, _, _, enq, x = parse_meta(m)
if s ~= 'q' or token_of(enq, x) ~= ARGV[2] or not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return -1
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[4], 'progress', '1')
emit({ cfg = KEYS[4], stats = KEYS[5], events = KEYS[6] }, 'progress', { ARGV[1] }, { ARGV[3] })
return 1
