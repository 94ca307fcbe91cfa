-- lib/history.lua: the queue's per-minute history (docs/data-model.md, "History").

-- A day's hash lives 15 days after its last write (history.rs reads at most 14 days back).
local HISTORY_TTL_MS = 15 * 86400000

-- With a worker's report: the first report of each minute (UTC, Redis clock) writes the queue's
-- totals into that day's hash `hist:<day since the epoch>`, field the minute of the day, value
-- "<enqueued>,<completed>,<retried>,<dead-lettered>,<cancelled>,<lt:count>,<lt:sum_ms>"
-- (scripts/encoding.rs: `HistorySnapshot`). Later reports in that minute cost one HEXISTS.
local function snapshot_history(K, now)
  local day = math.floor(now / 86400000)
  local minute = tostring(math.floor((now - day * 86400000) / 60000))
  local key = K.hist .. string.format('%d', day)
  if redis.call('HEXISTS', key, minute) == 1 then return end
  local s = redis.call('HMGET', K.stats, 'enqueued', 'completed', 'retried', 'failed', 'cancelled')
  local m = redis.call('HMGET', K.metrics, 'lt:count', 'lt:sum_ms')
  local v = {}
  for i = 1, 5 do v[i] = s[i] or '0' end
  v[6], v[7] = m[1] or '0', m[2] or '0'
  redis.call('HSET', key, minute, table.concat(v, ','))
  redis.call('PEXPIRE', key, HISTORY_TTL_MS)
end

-- With the enqueue that creates a queue shard's `enqueued` counter (`total`, what HINCRBY
-- returned, equals `added`): a snapshot of zeros at this minute, unless one is there already. A
-- shard's first worker report may come minutes later (a sharded queue's workers report to one
-- shard at a time); from this baseline the history counts what happened before that report,
-- instead of taking the report's totals as its start.
local function history_born(K, now, total, added)
  if total ~= added then return end
  local day = math.floor(now / 86400000)
  local minute = tostring(math.floor((now - day * 86400000) / 60000))
  local key = K.hist .. string.format('%d', day)
  if redis.call('HSETNX', key, minute, '0,0,0,0,0,0,0') == 1 then
    redis.call('PEXPIRE', key, HISTORY_TTL_MS)
  end
end
