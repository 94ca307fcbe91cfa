#!lua flags=no-writes
--[[ Read one schedule, for run now (docs/data-model.md, "Schedules"). Writes nothing.
  KEYS[1] sched hash (name -> "<version>|<spec>")
  ARGV[1] name
  Returns: { Redis now ms, the stored "<version>|<spec>" or "" when there is no such schedule }. ]]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
return { now, redis.call('HGET', KEYS[1], ARGV[1]) or '' }
