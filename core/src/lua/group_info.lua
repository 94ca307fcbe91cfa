#!lua flags=no-writes
--[[ What one group holds and obeys, read without writing: its ready jobs, its running jobs (the
  kept count), and its own settings (docs/data-model.md, "Queue control"). A few calls, whatever the
  number of groups or running jobs.
  KEYS[1] g (group key prefix)   KEYS[2] gstate hash   KEYS[3] gcfg hash   KEYS[4] cfg hash
  KEYS[5] active zset            KEYS[6] route hash
  KEYS[7] meta hash              KEYS[8] rat hash
  ARGV[1] group name
  Returns: { ready, running, own limit, own rate, paused ("1" or false), latency ms (how long the
  longest-ready of its next 10 jobs has been ready, see lib/latency.lua; 0 none), the shared
  limiter it names (false none) }. ]]
--#include lib/latency.lua
--#K
local g = ARGV[1]
local running = tonumber(redis.call('HGET', K.gstate, g) or '0')
local own = redis.call('HMGET', K.gcfg, 'limit:' .. g, 'rate:' .. g, 'paused:' .. g, 'limiter:' .. g)
local t = redis.call('TIME')
local latency = group_latencies(K, { g }, t[1] * 1000 + math.floor(t[2] / 1000))[1]
return { redis.call('ZCARD', K.g .. g), running, own[1], own[2], own[3], latency, own[4] }
