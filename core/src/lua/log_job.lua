--[[ Add a line to a running job's log: only the holder of the current delivery may (fenced by
  the lease token, as set_progress.lua). The line is stamped with Redis's time and the attempt;
  the log keeps its newest lines within ARGV[5] lines and ARGV[6] bytes (the oldest go), and goes
  with the job's data (docs/data-model.md, "Attempts and logs").
  KEYS[1] active zset   KEYS[2] meta hash   KEYS[3] logs hash (id -> bytes kept)
  KEYS[4] lg (prefix of job log lists)   KEYS[5] cfg hash (its `logs` field says the queue has some)
  ARGV[1] job id   ARGV[2] lease token   ARGV[3] attempt   ARGV[4] the line (already size-checked)
  ARGV[5] most lines kept   ARGV[6] most bytes kept
  Returns: 1 stored, -1 the lease was lost (expired and recovered), -2 no such job. ]]
--#include lib/base.lua
--#include lib/meta.lua
--#K
local id = ARGV[1]
local m = redis.call('HGET', K.meta, id)
if not m then return -2 end
local s, _, _, enq, x = parse_meta(m)
if s ~= 'q' or token_of(enq, x) ~= ARGV[2] or not redis.call('ZSCORE', K.active, id) then
  return -1
end
local entry = now_ms() .. '|' .. ARGV[3] .. '|' .. ARGV[4]
local key = K.lg .. id
local n = redis.call('RPUSH', key, entry)
local bytes = redis.call('HINCRBY', K.logs, id, #entry)
local max_n, max_b = tonumber(ARGV[5]), tonumber(ARGV[6])
local dropped = 0
while (n > max_n or bytes > max_b) and n > 1 do
  local old = redis.call('LPOP', key)
  n = n - 1
  bytes = bytes - #old
  dropped = dropped + #old
end
if dropped > 0 then redis.call('HINCRBY', K.logs, id, -dropped) end
redis.call('HSET', K.cfg, 'logs', '1')
return 1
