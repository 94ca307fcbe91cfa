-- lib/tasks.lua: per-task counts from the workers' reports (docs/data-model.md, "Per-task metrics").

-- Most task names a queue shard tracks (metrics/tasks.rs: TASKS_MAX); later names count under
-- "(other)", which no encoded name can be (names arrive percent-encoded, "(" included).
local TASKS_MAX = 100
-- Snapshots: by the 10 minutes in `tm:<hour since the epoch>` (kept 3 hours, for windows up to
-- 2 hours) and by the hour in `th:<day since the epoch>` (kept 15 days).
local TASK_SLOTS = { { 'tm', 600000, 3600000, 3 * 3600000 }, { 'th', 3600000, 86400000, 15 * 86400000 } }

-- The first report of each slot files the running totals (`tstat`) as they were before it, in
-- the report's own encoding: "<task>:<completed>:<failed>:<dead>:<runs>:<run us>;...". Later
-- reports in that slot cost one HEXISTS per series.
local function snapshot_tasks(K, now)
  local totals = nil
  for _, s in ipairs(TASK_SLOTS) do
    local prefix, slot_ms, key_ms, ttl = K[s[1]], s[2], s[3], s[4]
    local kn = math.floor(now / key_ms)
    local key = prefix .. string.format('%d', kn)
    local field = tostring(math.floor((now - kn * key_ms) / slot_ms))
    if redis.call('HEXISTS', key, field) == 0 then
      if not totals then
        local by = {}
        local order = {}
        local flat = redis.call('HGETALL', K.tstat)
        for i = 1, #flat, 2 do
          local kind, name = string.match(flat[i], '^(%a+):(.*)$')
          if kind then
            local t = by[name]
            if not t then
              t = { c = 0, f = 0, d = 0, n = 0, us = 0 }
              by[name] = t
              order[#order + 1] = name
            end
            if t[kind] then t[kind] = tonumber(flat[i + 1]) end
          end
        end
        local parts = {}
        for _, name in ipairs(order) do
          local t = by[name]
          parts[#parts + 1] = name .. ':' .. string.format('%d:%d:%d:%d:%d', t.c, t.f, t.d, t.n, t.us)
        end
        totals = table.concat(parts, ';')
      end
      redis.call('HSET', key, field, totals)
      redis.call('PEXPIRE', key, ttl)
    end
  end
end

-- Adds a report's per-task counts to the running totals: `tstat`, field "<kind>:<task>" (kinds
-- c completed, f failed attempts, d dead-lettered, n runs, us run time in µs), tasks past
-- TASKS_MAX under "(other)" (the `tasks` set holds the names tracked).
local function file_tasks(K, tasks)
  for name, c, f, d, n, us in string.gmatch(tasks, '([^:;]*):(%d+):(%d+):(%d+):(%d+):(%d+)') do
    if name ~= '(other)' and redis.call('SISMEMBER', K.tasks, name) == 0 then
      if redis.call('SCARD', K.tasks) < TASKS_MAX then
        redis.call('SADD', K.tasks, name)
      else
        name = '(other)'
      end
    end
    if c ~= '0' then redis.call('HINCRBY', K.tstat, 'c:' .. name, c) end
    if f ~= '0' then redis.call('HINCRBY', K.tstat, 'f:' .. name, f) end
    if d ~= '0' then redis.call('HINCRBY', K.tstat, 'd:' .. name, d) end
    if n ~= '0' then redis.call('HINCRBY', K.tstat, 'n:' .. name, n) end
    if us ~= '0' then redis.call('HINCRBY', K.tstat, 'us:' .. name, us) end
  end
end
