--[[ Release one leased job (graceful shutdown): back to the front of the ready list, the attempt
  not counted. Only the holder of the current delivery may; anyone else gets -1 (LEASE_LOST) and
  nothing changes.
  KEYS[1] active zset   KEYS[2] ready list   KEYS[3] meta hash   KEYS[4] wake list
  ARGV[1] job id   ARGV[2] lease token
  Returns: 1 released, -1 lease lost. ]]
--#include lib_jobs.lua
local id = ARGV[1]
local m = redis.call('HGET', KEYS[3], id)
if not m then return -1 end
local s, a, mx, enq, x = parse_meta(m)
if s ~= 'q' or token_of(enq, x) ~= ARGV[2] or redis.call('ZREM', KEYS[1], id) == 0 then
  return -1
end
redis.call('HSET', KEYS[3], id, meta_of('q', a, mx, enq, tonumber(x) + 1))
redis.call('LPUSH', KEYS[2], id)
wake(KEYS[4])
return 1
