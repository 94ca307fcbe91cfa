--[[ Change a queue's queue-control settings (docs/data-model.md, "Queue control"), then wake idle
  workers. A changed default may give room to every held group: it starts a sweep of the held
  groups that fetches carry out, 100 groups each (cfg `recheck`), so this call's work does not grow
  with the groups. (A group's own settings: set_group_control.lua.)
  KEYS[1] cfg hash     KEYS[2] gheld set    KEYS[3] wake list
  ARGV[1], ARGV[2], ...: pairs of setting, value ("" removes the setting): paused, max_active,
    rate ("n|ms", or "n|ms|b<burst>" a token bucket), burst_total, glimit, grate (the same forms)
  Returns: 1. ]]
--#include lib/base.lua
--#K
for i = 1, #ARGV - 1, 2 do
  -- A changed rate starts with its token bucket full.
  if ARGV[i] == 'rate' and redis.call('HGET', K.cfg, 'rate') ~= (ARGV[i + 1] ~= '' and ARGV[i + 1] or false) then
    redis.call('HDEL', K.cfg, 'rtat')
  end
  if ARGV[i + 1] == '' then
    redis.call('HDEL', K.cfg, ARGV[i])
  else
    redis.call('HSET', K.cfg, ARGV[i], ARGV[i + 1])
  end
end
if redis.call('EXISTS', K.gheld) == 1 then
  -- A default changed: every group held out of the rotation may have room now. Fetches offer
  -- them their place, from the start of the held set (a sweep going on starts over).
  redis.call('HSET', K.cfg, 'recheck', '0')
end
wake(K.wake)
return 1
