-- lib/workers.lua: The worker registry (docs/data-model.md, "Workers"): the `workers` zset (id ->
-- when last seen, ms) and the `winfo` hash (id -> the worker's entry, encoded by the worker).

-- A worker not seen for this long is forgotten (readers show only those seen within ALIVE_FOR).
local WORKER_FORGET_MS = 600000
-- The most forgotten workers one call removes (bounded work per call).
local WORKER_FORGET_MAX = 20

-- Removes up to WORKER_FORGET_MAX workers not seen for WORKER_FORGET_MS, with their entries.
local function forget_workers(K, now)
  local old = redis.call('ZRANGEBYSCORE', K.workers, '-inf', now - WORKER_FORGET_MS, 'LIMIT', 0,
    WORKER_FORGET_MAX)
  for _, id in ipairs(old) do
    redis.call('ZREM', K.workers, id)
    redis.call('HDEL', K.winfo, id)
  end
end

-- The worker `wid` is alive now, and `entry` ('' to keep the one stored) says what it runs.
local function worker_seen(K, now, wid, entry)
  redis.call('ZADD', K.workers, now, wid)
  if entry ~= '' then redis.call('HSET', K.winfo, wid, entry) end
end
