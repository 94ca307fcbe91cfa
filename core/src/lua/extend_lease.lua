--[[ Extend a lease: only the holder of the current delivery may.
  KEYS[1] active zset (score = lease deadline ms)   KEYS[2] meta hash
  ARGV[1] job id   ARGV[2] lease token   ARGV[3] new lease length in ms (from Redis now)
  Returns: the new deadline in ms, or -1 when the lease was lost (expired and recovered). ]]
--#include lib/meta.lua
local m = redis.call('HGET', KEYS[2], ARGV[1])
if not m then return -1 end
local s, _, _, enq, x = parse_meta(m)
if s ~= 'q' or token_of(enq, x) ~= ARGV[2] or not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return -1
end
local t = redis.call('TIME')
local deadline = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], 'XX', deadline, ARGV[1])
return deadline
