--[[ Change one group's queue-control settings (docs/data-model.md, "Queue control"), then offer the
  group its place in the rotation (the change may let it start a job) and wake idle workers. (The
  queue's settings and the groups' defaults: set_queue_control.lua.)
  KEYS[1] cfg hash     KEYS[2] gcfg hash    KEYS[3] gstate hash   KEYS[4] grot list
  KEYS[5] gheld set    KEYS[6] gwait zset   KEYS[7] wake list     KEYS[8] stats hash
  KEYS[9] g (group key prefix)              KEYS[10] gr (group rate-log prefix)
  KEYS[11] active zset  KEYS[12] route hash
  KEYS[13] gset set (the groups in the rotation)
  ARGV[1] the group's name
  ARGV[2], ARGV[3], ...: pairs of setting, value ("" removes the setting): limit, rate ("n|ms"),
    paused
  Returns: 1. ]]
--#include lib/base.lua
--#include lib/cfg.lua
--#include lib/control.lua
--#K
local group = ARGV[1]
for i = 2, #ARGV - 1, 2 do
  if ARGV[i + 1] == '' then
    redis.call('HDEL', K.gcfg, ARGV[i] .. ':' .. group)
  else
    redis.call('HSET', K.gcfg, ARGV[i] .. ':' .. group, ARGV[i + 1])
  end
end
-- A change offers the group at once, a group given back to its limiter too (its wait is over).
redis.call('HDEL', K.gcfg, 'back:' .. group)
local now = now_ms()
local C = queue_cfg(K)
groups_offer(K, C, { group }, now, false)
wake(K.wake)
return 1
