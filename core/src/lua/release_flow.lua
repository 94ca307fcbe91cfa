--[[ Release held flow jobs (docs/data-model.md, "Flows"): their flow's root exists, so each
  held job (ARGV) is placed as an enqueue would place it (delayed until its due time, else
  ready), unless it waits for children of its own (it is placed once they finished). Jobs no
  longer held are skipped, so a release may run twice.
  KEYS[1] fhold zset   KEYS[2] froot hash   KEYS[3] fwait hash   KEYS[4] ready list
  KEYS[5] delayed zset   KEYS[6] wake list   KEYS[7] stats hash   KEYS[8] route hash
  KEYS[9] prio zset   KEYS[10] grot list   KEYS[11] gheld set   KEYS[12] gstate hash
  KEYS[13] gcfg hash   KEYS[14] gwait zset   KEYS[15] cfg hash   KEYS[16] g (group key prefix)
  KEYS[17] gr (group rate-log prefix)   KEYS[18] gset set   KEYS[19] p (priority list key prefix)
  KEYS[20] rat hash (when jobs made ready after their enqueue became ready)
  ARGV[1], ARGV[2], ...: the held job ids
  Returns: how many were released. ]]
--#include lib/chunked.lua
--#include lib/base.lua
--#include lib/cfg.lua
--#include lib/control.lua
--#K
local now = now_ms()
local ids = {}
for i = 1, #ARGV do ids[i] = ARGV[i] end
local dues = chunked_read('HMGET', K.froot, ids)
local waits = chunked_read('HMGET', K.fwait, ids)
local took, place, delayed = {}, {}, {}
for i, id in ipairs(ids) do
  if dues[i] then
    took[#took + 1] = id
    if not waits[i] then
      local due = tonumber(string.match(dues[i], '^(%d+)'))
      if due > now then
        delayed[#delayed + 1] = due
        delayed[#delayed + 1] = id
      else
        place[#place + 1] = id
      end
    end
  end
end
chunked('ZREM', K.fhold, took)
chunked('HDEL', K.froot, took)
chunked('ZADD', K.delayed, delayed)
if #place > 0 then make_ready(K, queue_cfg(K), place, false, now) end
if #place > 0 or #delayed > 0 then wake(K.wake) end
return #took
