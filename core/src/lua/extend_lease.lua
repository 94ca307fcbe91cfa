--[[ Extend a lease: only the holder of the current delivery may. A worker's renewer also says it
  is alive (docs/data-model.md, "Workers"): a worker busy with long jobs does not fetch, but renews.
  KEYS[1] active zset (score = lease deadline ms)   KEYS[2] meta hash
  KEYS[3] workers zset   KEYS[4] winfo hash   KEYS[5] attempts hash   KEYS[6] cfg hash
  ARGV[1] job id   ARGV[2] lease token   ARGV[3] new lease length in ms (from Redis now)
  ARGV[4] the renewing worker's id (optional; "" or absent: none)
  ARGV[5] its registry entry (optional; "" keeps the stored one)
  ARGV[6] the attempt's run "<start ms>~<worker id>" (optional): recorded in the job's attempts
  as under way ("running"), so an attempt whose worker dies shows its start and worker (see
  "Attempts and logs"); the worker sends it with its first renewal of the attempt
  Returns: the new deadline in ms, or -1 when the lease was lost (expired and recovered). ]]
--#include lib/meta.lua
--#include lib/workers.lua
--#include lib/attempts.lua
--#K
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
if ARGV[4] and ARGV[4] ~= '' then worker_seen(K, now, ARGV[4], ARGV[5] or '') end
local m = redis.call('HGET', KEYS[2], ARGV[1])
if not m then return -1 end
local s, a, _, enq, x = parse_meta(m)
if s ~= 'q' or token_of(enq, x) ~= ARGV[2] or not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return -1
end
local deadline = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], 'XX', deadline, ARGV[1])
if ARGV[6] and ARGV[6] ~= '' then
  local started, worker = run_of(ARGV[6])
  K.no_attempts = not redis.call('HGET', K.cfg, 'attempts')
  add_attempts(K, { { ARGV[1], { n = tonumber(a) + 1, s = started, w = worker, o = 'running' } } })
end
return deadline
