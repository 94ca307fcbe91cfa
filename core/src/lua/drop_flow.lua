--[[ Drop held flow jobs whose flow was never sealed (its root was not written, or is gone):
  they never run. Each held job (ARGV) is deleted with its flow records and its place in the
  idempotency memory, and no parent is told (the whole flow goes). Jobs no longer held are
  skipped (a held entry without its root's record, which nothing can settle, is removed)
  (docs/data-model.md, "Flows").
  KEYS[1] fhold zset   KEYS[2] froot hash   KEYS[3] fwait hash   KEYS[4] fparent hash
  KEYS[5] jobs hash    KEYS[6] meta hash    KEYS[7] route hash   KEYS[8] expires zset
  KEYS[9] stats hash   KEYS[10] fl (prefix of the children's lists)   KEYS[11] fk (prefix of the
  children's results)   KEYS[12] idem zset   KEYS[13] cost hash
  ARGV[1], ARGV[2], ...: the held job ids
  Returns: how many were dropped. ]]
--#include lib/chunked.lua
--#K
local ids = {}
for i = 1, #ARGV do ids[i] = ARGV[i] end
local dues = chunked_read('HMGET', K.froot, ids)
local took, keys, stray = {}, {}, {}
for i, id in ipairs(ids) do
  if dues[i] then
    took[#took + 1] = id
    keys[#keys + 1] = K.fl .. id
    keys[#keys + 1] = K.fk .. id
  else
    stray[#stray + 1] = id
  end
end
chunked('ZREM', K.fhold, stray)
if #took == 0 then return 0 end
chunked('ZREM', K.fhold, took)
chunked('HDEL', K.froot, took)
chunked('HDEL', K.fwait, took)
chunked('HDEL', K.fparent, took)
chunked('HDEL', K.jobs, took)
chunked('HDEL', K.meta, took)
chunked('HDEL', K.route, took)
chunked('HDEL', K.cost, took)
chunked('ZREM', K.expires, took)
chunked('ZREM', K.idem, took)
for i = 1, #keys, 1000 do redis.call('UNLINK', unpack(keys, i, math.min(i + 999, #keys))) end
redis.call('HINCRBY', K.stats, 'enqueued', -#took)
return #took
