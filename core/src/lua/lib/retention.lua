-- lib/retention.lua: Retention: the idempotency window, the dead set's and completed jobs' bounds (docs/data-model.md,
-- "Queue policy").
--#include lib/base.lua
--#include lib/chunked.lua
--#include lib/forget.lua

-- Marks explicit ids as finished at `now` in the idem zset (only those it holds), and drops the
-- ones older than the window and the oldest beyond P.idemmax.
local function idem_finished(K, now, P, ids)
  if P.idem == 0 or #ids == 0 or not key_exists(K, 'idem') then return end
  local args = {}
  for _, id in ipairs(ids) do
    args[#args + 1] = now
    args[#args + 1] = id
  end
  for i = 1, #args, 1000 do
    redis.call('ZADD', K.idem, 'XX', unpack(args, i, math.min(i + 999, #args)))
  end
  redis.call('ZREMRANGEBYSCORE', K.idem, '-inf', '(' .. (now - P.idem))
  local over = redis.call('ZCARD', K.idem) - P.idemmax
  if over > 0 then redis.call('ZREMRANGEBYRANK', K.idem, 0, over - 1) end
end

-- Keeps the dead set within the policy's count and age: the oldest beyond are deleted with their
-- data, at most 1000 per call, and counted as dead_trimmed.
local function trim_dead(K, now, P)
  local old = {}
  if P.keepdead >= 0 then
    local over = redis.call('ZCARD', K.dead) - P.keepdead
    if over > 0 then old = redis.call('ZRANGE', K.dead, 0, math.min(over, 1000) - 1) end
  end
  if P.keepdeadfor > 0 and #old < 1000 then
    local aged = redis.call('ZRANGEBYSCORE', K.dead, '-inf', '(' .. (now - P.keepdeadfor),
      'LIMIT', #old, 1000 - #old)
    for _, id in ipairs(aged) do old[#old + 1] = id end
  end
  if #old == 0 then return end
  chunked('ZREM', K.dead, old)
  forget(K, old)
  redis.call('HINCRBY', K.stats, 'dead_trimmed', #old)
end

-- Deletes the completed jobs older than P.keepfor ms (up to 100 a call), oldest first.
local function trim_done_aged(K, now, P)
  if P.keep == 0 or P.keepfor == 0 then return end
  local old = {}
  for _ = 1, 100 do
    local head = redis.call('LINDEX', K.done, 0)
    if not head then break end
    local hm = redis.call('HGET', K.meta, head)
    local finished = hm and tonumber(string.match(hm, '^c|%d+|%d+|%d+|(%d+)'))
    if finished and finished > now - P.keepfor then break end
    redis.call('LPOP', K.done)
    old[#old + 1] = head
  end
  forget(K, old)
end
