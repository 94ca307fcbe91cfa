-- lib/cfg.lua: The queue's settings (cfg hash), read once per call.

-- The queue's settings (cfg hash), read once per call; marks K with the features the queue never
-- used (see "Results and progress").
local function queue_cfg(K)
  local c = redis.call('HMGET', K.cfg, 'paused', 'max_active', 'rate', 'glimit', 'grate',
    'results', 'progress', 'waited', 'dedup', 'events', 'sched', 'recheck', 'ghosts', 'pghosts', 'until', 'expires', 'flows',
    'attempts', 'logs', 'limiter', 'costs', 'gback')
  K.no_results, K.no_progress, K.no_waiters, K.no_dedup = not c[6], not c[7], not c[8], not c[9]
  K.no_expires, K.no_flows = not c[16], not c[17]
  K.no_attempts, K.no_logs, K.no_costs = not c[18], not c[19], not c[21]
  if K.events then K.evmax = tonumber(c[10]) or false end
  return { paused = c[1] == '1', max_active = tonumber(c[2]), rate = c[3] or nil,
    glimit = tonumber(c[4]), grate = c[5] or nil, gc = {}, act = {}, rs = {}, sched = c[11] == '1',
    recheck = c[12] or nil, ghosts = tonumber(c[13]) or 0, pghosts = tonumber(c[14]) or 0,
    until_ms = tonumber(c[15]), limiter = c[20] or nil, gback = c[22] == '1' }
end
