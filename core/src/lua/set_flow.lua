--[[ Change flow-control settings (lib_jobs.lua, "Flow control"), then offer the groups the change
  may let start a job their place in the rotation, and wake idle workers: a group's own setting
  offers that group; a queue default starts a sweep of the held groups that fetches carry out,
  100 groups each (cfg `recheck`), so this call's work does not grow with the groups.
  KEYS[1] cfg hash     KEYS[2] gcfg hash    KEYS[3] gstate hash   KEYS[4] grot list
  KEYS[5] gheld set    KEYS[6] gwait zset   KEYS[7] wake list     KEYS[8] stats hash
  KEYS[9] g (group key prefix)              KEYS[10] gr (group rate-log prefix)
  KEYS[11] active zset  KEYS[12] route hash
  KEYS[13] gset set (the groups in the rotation)
  ARGV[1] "queue" (queue settings) or a group name prefixed by "group:"
  ARGV[2], ARGV[3], ...: pairs of setting, value ("" removes the setting); queue settings:
    paused, max_active, rate ("n|ms"), glimit, grate ("n|ms"); group settings: limit, rate,
    paused
  Returns: 1. ]]
--#include lib_jobs.lua
local K = { cfg = KEYS[1], gcfg = KEYS[2], gstate = KEYS[3], grot = KEYS[4], gheld = KEYS[5],
  gwait = KEYS[6], wake = KEYS[7], stats = KEYS[8], g = KEYS[9], gr = KEYS[10],
  active = KEYS[11], route = KEYS[12], gset = KEYS[13] }
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
  groups_offer(K, C, { group }, now, false)
elseif redis.call('EXISTS', K.gheld) == 1 then
  -- A default changed: every group held out of the rotation may have room now. Fetches offer
  -- them their place, from the start of the held set (a sweep going on starts over).
  redis.call('HSET', K.cfg, 'recheck', '0')
end
wake(K.wake)
return 1
