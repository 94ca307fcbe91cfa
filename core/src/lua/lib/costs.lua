-- lib/costs.lua: Jobs' costs: the tokens a job takes from a token-bucket rate when it starts
-- (docs/data-model.md, "Queue control"). Only jobs whose cost is not 1 have one stored (the cost
-- hash), so a queue that never gives a cost has no key and looks nothing up.
--#include lib/base.lua
--#include lib/chunked.lua
--#include lib/control.lua

-- The queue's token bucket, when its rate is one and some job has a cost (nil otherwise: every
-- job takes one token, which the fetch's room already counts). `used`: the tokens this call's
-- jobs take so far; `wait`: set once a job did not fit, the ms until its tokens are back.
local function queue_bucket(K, tat, n, ms, burst)
  if not burst or not key_exists(K, 'cost') then return nil end
  return { tat = tat, n = n, ms = ms, burst = burst, used = 0 }
end

-- Looks up the costs of `ids` not looked up yet in this call (C.cost: id -> n).
local function job_costs(K, C, ids)
  C.cost = C.cost or {}
  if not key_exists(K, 'cost') then return end
  local need = {}
  for _, id in ipairs(ids) do
    if not C.cost[id] then need[#need + 1] = id end
  end
  local v = hmget(K.cost, need)
  for i, id in ipairs(need) do C.cost[id] = tonumber(v[i]) or 1 end
end

-- The tokens job `id` takes from a bucket of `burst` (a cost above it takes the whole burst).
local function cost_in(C, id, burst)
  return math.min(C.cost and C.cost[id] or 1, burst)
end

-- How many of `ids` (in order, the first `upto`) fit in a bucket ("tat", n per ms, burst) that
-- has `used` tokens taken by this call already: the count, the tokens they take, and when one
-- did not fit, the ms until its tokens are back. A job that does not fit stops the count: those
-- behind it wait with it (no cheaper job overtakes it).
local function bucket_fit(C, ids, upto, tat, n, ms, burst, used, now)
  local took = 0
  for i = 1, upto do
    local c = cost_in(C, ids[i], burst)
    local room, wait = bucket_room(tat, n, ms, burst, used + took + c - 1, now)
    if room < 1 then return i - 1, took, wait end
    took = took + c
  end
  return upto, took
end

-- Of jobs popped from the front of list `key`, those the queue's bucket Q can start now; the
-- others go back to the front of the list, in order, and the queue waits (Q.wait).
local function fit_list(K, C, Q, key, got, now)
  if not Q or Q.wait or not got or #got == 0 then return got end
  job_costs(K, C, got)
  local k, took, wait = bucket_fit(C, got, #got, Q.tat, Q.n, Q.ms, Q.burst, Q.used, now)
  Q.used = Q.used + took
  if k == #got then return got end
  Q.wait = wait
  local kept, rev = {}, {}
  for i = 1, k do kept[i] = got[i] end
  for i = #got, k + 1, -1 do rev[#rev + 1] = got[i] end
  chunked('LPUSH', key, rev)
  return kept
end

-- Of jobs popped from group g's zset (ZPOPMIN's id, score pairs), those the group's bucket (if
-- its rate is one) and the queue's Q can start now; the others go back in their place. Returns
-- the pairs kept; what stopped them ("g": the group's bucket, "q": the queue's), with the ms
-- until the group's tokens are back for "g"; and the tokens taken from the group's bucket (nil
-- when its rate is not one).
local function fit_group(K, C, Q, g, got, now)
  local ids = {}
  for k = 1, #got, 2 do ids[#ids + 1] = got[k] end
  job_costs(K, C, ids)
  local keep, cut, wait, gtok = #ids, nil, nil, nil
  local c = group_cfg(K, C, g)
  local gn, gms, gb = parse_rate(c.rate)
  if gb then
    if c.tat == nil then c.tat = redis.call('GET', group_bucket_key(K, g)) end
    keep, gtok, wait = bucket_fit(C, ids, #ids, c.tat, gn, gms, gb, C.rs[g] or 0, now)
    if keep < #ids then cut = 'g' end
  end
  if Q and not Q.wait then
    local k, took, w = bucket_fit(C, ids, keep, Q.tat, Q.n, Q.ms, Q.burst, Q.used, now)
    Q.used = Q.used + took
    if k < keep then
      keep, cut, wait, Q.wait = k, 'q', nil, w
      if gb then gtok = select(2, bucket_fit(C, ids, k, c.tat, gn, gms, gb, C.rs[g] or 0, now)) end
    end
  end
  if keep == #ids then return got, nil, nil, gtok end
  local kept, back = {}, {}
  for k = 1, #got, 2 do
    local t = (k + 1) / 2 <= keep and kept or back
    local m = #t
    if t == kept then
      t[m + 1], t[m + 2] = got[k], got[k + 1]
    else
      t[m + 1], t[m + 2] = got[k + 1], got[k]
    end
  end
  chunked('ZADD', K.g .. g, back)
  return kept, cut, wait, gtok
end
