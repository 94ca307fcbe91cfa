--[[ Release one leased job (graceful shutdown): back to the front of its queue (before the jobs
  of its priority), the attempt not counted; a job whose cancel was requested ends cancelled
  instead (docs/data-model.md). Only the holder of the current delivery may; anyone
  else gets -1 (LEASE_LOST) and nothing changes. A group's slot is freed.
  KEYS[1] active zset   KEYS[2] ready list   KEYS[3] meta hash   KEYS[4] wake list
  KEYS[5] stats hash    KEYS[6] route hash   KEYS[7] prio zset   KEYS[8] grot list
  KEYS[9] gheld set      KEYS[10] gstate hash KEYS[11] gcfg hash  KEYS[12] gwait zset
  KEYS[13] cfg hash     KEYS[14] g (group key prefix)            KEYS[15] gr (group rate-log prefix)
  KEYS[16] gset set (the groups in the rotation)
  KEYS[17] p (priority list key prefix)   KEYS[18] cancel set   KEYS[19] jobs hash
  KEYS[20] errors hash  KEYS[21] idem zset   KEYS[22] results hash   KEYS[23] progress hash
  KEYS[24] waiters hash  KEYS[25] fin (prefix of the waiters' notice lists)
  KEYS[26] dd (dedup key prefix)   KEYS[27] dkey hash
  KEYS[28] events stream   KEYS[29] expires zset
  KEYS[30] fparent hash   KEYS[31] fout list   KEYS[32] fk (prefix of flow children's results)
  KEYS[33] fl (prefix of flow children's lists)   KEYS[34] fwait hash
  KEYS[35] rat hash (when jobs made ready after their enqueue became ready)
  KEYS[36] attempts hash   KEYS[37] logs hash   KEYS[38] lg (prefix of job log lists)
  KEYS[39] cost hash (id -> cost, for jobs whose cost is not 1)
  ARGV[1] job id   ARGV[2] lease token
  ARGV[3] (a give-back) ms its group stays out of the rotation; ARGV[4], ARGV[5], ...: more pairs
    of job id, lease token. A give-back undoes deliveries the worker got no room for from their
    group's shared limiter (docs/data-model.md, "Limiters"): each job goes back to its place in
    its group, its meta untouched (neither an attempt nor a delivery is counted), and its group
    is passed over in the rotation for ARGV[3] ms (offered again then, or when one of its jobs
    ends).
  Returns: 1 released, 3 cancelled, -1 lease lost; a give-back: how many were given back. ]]
--#include lib/base.lua
--#include lib/meta.lua
--#include lib/cfg.lua
--#include lib/cancel.lua
--#include lib/route.lua
--#include lib/control.lua
--#K
if ARGV[3] then
  local wait, now, C = tonumber(ARGV[3]), now_ms(), queue_cfg(K)
  local back, groups, seen, n = {}, {}, {}, 0
  local list = { ARGV[1], ARGV[2] }
  for i = 4, #ARGV do list[#list + 1] = ARGV[i] end
  for i = 1, #list - 1, 2 do
    local id, token = list[i], list[i + 1]
    local s, _, _, enq, x = parse_meta(redis.call('HGET', K.meta, id) or '')
    if s == 'q' and token_of(enq, x) == token and redis.call('ZREM', K.active, id) == 1 then
      n = n + 1
      local r = routes(K, { id })
      local g = r and r[1] and select(2, parse_route(r[1]))
      if g and g ~= '' then
        group_done(K, C, g, now)
        if not seen[g] then
          seen[g] = true
          groups[#groups + 1] = g
        end
      end
      if cancel_requested(K, id) then
        end_cancelled(K, { id }, { enq })
      else
        back[#back + 1] = id
      end
    end
  end
  make_ready(K, C, back, false, now)
  if n > 0 then redis.call('HINCRBY', K.stats, 'given_back', n) end
  -- Each group keeps its place in the rotation, marked to be passed over until now + wait: the
  -- fetch that meets it holds it then (the rotation is never searched, whatever its length), and
  -- one of its jobs ending clears the mark (groups_done).
  if #groups > 0 then
    local marks = {}
    for _, g in ipairs(groups) do
      marks[#marks + 1] = 'back:' .. g
      marks[#marks + 1] = now + wait
    end
    chunked('HSET', K.gcfg, marks)
    if not C.gback then redis.call('HSET', K.cfg, 'gback', '1') end
  end
  return n
end
local id = ARGV[1]
local m = redis.call('HGET', K.meta, id)
if not m then return -1 end
local s, a, mx, enq, x = parse_meta(m)
if s ~= 'q' or token_of(enq, x) ~= ARGV[2] or redis.call('ZREM', K.active, id) == 0 then
  return -1
end
local now = now_ms()
local C = queue_cfg(K)
local r = routes(K, { id })
local g = r and r[1] and select(2, parse_route(r[1]))
if g and g ~= '' then group_done(K, C, g, now) end
if cancel_requested(K, id) then
  end_cancelled(K, { id }, { enq })
  return 3
end
redis.call('HSET', K.meta, id, meta_of('q', a, mx, enq, tonumber(x) + 1))
make_ready(K, C, { id }, true, now)
wake(K.wake)
return 1
