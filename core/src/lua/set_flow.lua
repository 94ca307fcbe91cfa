--[[ Change flow-control settings (lib_jobs.lua, "Flow control"), then offer every group the
  change may let start a job, and wake idle workers.
  KEYS[1] cfg hash     KEYS[2] gcfg hash    KEYS[3] gstate hash   KEYS[4] grot list
  KEYS[5] gset set     KEYS[6] gwait zset   KEYS[7] wake list     KEYS[8] gr (group rate-log prefix)
  ARGV[1] "queue" (queue settings) or a group name prefixed by "group:"
  ARGV[2], ARGV[3], ...: pairs of setting, value ("" removes the setting); queue settings:
    paused, max_active, rate ("n|ms"), glimit, grate ("n|ms"); group settings: limit, rate,
    paused
  Returns: 1. ]]
--#include lib_jobs.lua
local K = { cfg = KEYS[1], gcfg = KEYS[2], gstate = KEYS[3], grot = KEYS[4], gset = KEYS[5],
  gwait = KEYS[6], wake = KEYS[7], gr = KEYS[8] }
local group = string.match(ARGV[1], '^group:(.*)$')
for i = 2, #ARGV - 1, 2 do
  local key, field = K.cfg, ARGV[i]
  if group then key, field = K.gcfg, ARGV[i] .. ':' .. group end
  if ARGV[i + 1] == '' then
    redis.call('HDEL', key, field)
  else
    redis.call('HSET', key, field, ARGV[i + 1])
  end
end
local now = now_ms()
local C = queue_cfg(K)
if group then
  group_offer(K, C, group, now)
else
  -- A default changed: any group with ready jobs may start one now.
  for _, f in ipairs(redis.call('HKEYS', K.gstate)) do
    local g = string.match(f, '^r:(.*)$')
    if g then group_offer(K, C, g, now) end
  end
end
wake(K.wake)
return 1
