--[[ Enqueue this shard's part of a flow (docs/data-model.md, "Flows"): jobs that wait for their
  children (fwait: how many are pending), children that tell their parent when they finish
  (fparent), and jobs held until the flow is sealed (fhold, froot: written before the flow's root,
  released by release_flow.lua once it exists; a flow never sealed is dropped). A job neither held
  nor waiting is placed as enqueue_jobs.lua places it. If any of the ids exists already, or is an
  explicit id that finished within the idempotency window (idem), nothing is written. A parent's
  children list comes inline, or staged by the writer in `fs:<token>` (renamed to its `fl:<id>`
  here). Due times and deadlines are computed with Redis TIME.
  KEYS[1] jobs hash   KEYS[2] meta hash   KEYS[3] ready list   KEYS[4] delayed zset
  KEYS[5] wake list   KEYS[6] stats hash  KEYS[7] route hash   KEYS[8] prio zset
  KEYS[9] grot list    KEYS[10] gheld set  KEYS[11] gstate hash  KEYS[12] gcfg hash
  KEYS[13] gwait zset  KEYS[14] cfg hash  KEYS[15] g (group key prefix)
  KEYS[16] gr (group rate-log prefix)   KEYS[17] gset set   KEYS[18] p (priority list key prefix)
  KEYS[19] events stream   KEYS[20] expires zset   KEYS[21] fwait hash   KEYS[22] fhold zset
  KEYS[23] froot hash   KEYS[24] fparent hash   KEYS[25] fl (prefix of the children's lists)
  KEYS[26] idem zset   KEYS[27] fs (prefix of staged children's lists)
  KEYS[28] hist (prefix of the history's day hashes: the first enqueue a shard counts leaves its
  zero snapshot, see "History")
  KEYS[29] cost hash (id -> cost, for jobs whose cost is not 1)
  ARGV[1] number of jobs N, then per job 15 values: id, envelope, max attempts, delay ms, run-at
    ms (0 = use delay), route ("priority|group", "" none), deadline to start by ("", "a<ms>",
    "r<ms>"), "1" held, number of children, parent notice head ("" none: see lib/parents.lua),
    root ("<root id>\t<root base>", for a held job), its children ("<base>\t<id>\t<queue>"
    lines; "" when staged), the token of its staged children list ("" none), "1" remember the
    id in idem (an explicit id, the idempotency window on), its cost ("" for 1)
  An error while the queue is being obliterated (cfg "obliterating"): nothing written.
  Returns: { 1, "" } written, { 0, id }: that id exists or is remembered (nothing written), or
  { -1, id }: the staged children list of that job is missing or incomplete (nothing written). ]]
--#include lib/chunked.lua
--#include lib/base.lua
--#include lib/meta.lua
--#include lib/cfg.lua
--#include lib/events.lua
--#include lib/route.lua
--#include lib/control.lua
--#include lib/history.lua
--#K
local W, B = 15, 2
local now = now_ms()
local nows = tostring(now)
if redis.call('HEXISTS', K.cfg, 'obliterating') == 1 then
  return redis.error_reply('tideq: the queue is being obliterated; enqueue again once it is done')
end
local n = tonumber(ARGV[1])
local ids = {}
for i = 1, n do ids[i] = ARGV[B + (i - 1) * W] end
local exists = chunked_read('HMGET', K.meta, ids)
for i = 1, n do
  if exists[i] then return { 0, ids[i] } end
end
if redis.call('EXISTS', K.idem) == 1 then
  local remembered = chunked_read('ZMSCORE', K.idem, ids)
  for i = 1, n do
    if remembered[i] then return { 0, ids[i] } end
  end
end
for i = 1, n do
  local b = B + (i - 1) * W
  local token = ARGV[b + 12]
  if token ~= '' and redis.call('LLEN', K.fs .. token) ~= tonumber(ARGV[b + 8]) then
    return { -1, ids[i] }
  end
end
local nrouted = 0
for i = 1, n do
  if ARGV[B + (i - 1) * W + 5] ~= '' then nrouted = nrouted + 1 end
end
local seq = nrouted > 0 and seq_block(K, nrouted) or 0
local jobs, meta, route, ready, routed, delayed, expiry = {}, {}, {}, {}, {}, {}, {}
local waiting, parents, held, roots, idem, costs = {}, {}, {}, {}, {}, {}
for i = 1, n do
  local b = B + (i - 1) * W
  local id = ids[i]
  jobs[#jobs + 1] = id
  jobs[#jobs + 1] = ARGV[b + 1]
  meta[#meta + 1] = id
  meta[#meta + 1] = meta_of('q', '0', ARGV[b + 2], nows, '0')
  local r = ARGV[b + 5]
  if r ~= '' then
    seq = seq + 1
    local p, g = parse_route_arg(r)
    route[#route + 1] = id
    route[#route + 1] = route_of(p, seq, g)
  end
  local due = now + tonumber(ARGV[b + 3])
  if tonumber(ARGV[b + 4]) > 0 then due = tonumber(ARGV[b + 4]) end
  local by = expiry_deadline(ARGV[b + 6], due)
  if by then
    expiry[#expiry + 1] = by
    expiry[#expiry + 1] = id
  end
  local kids = tonumber(ARGV[b + 8])
  if kids > 0 then
    waiting[#waiting + 1] = id
    waiting[#waiting + 1] = kids
    if ARGV[b + 12] ~= '' then
      redis.call('RENAME', K.fs .. ARGV[b + 12], K.fl .. id)
      redis.call('PERSIST', K.fl .. id)
    else
      local list = {}
      for line in string.gmatch(ARGV[b + 11], '[^\n]+') do list[#list + 1] = line end
      chunked('RPUSH', K.fl .. id, list)
    end
  end
  if ARGV[b + 14] ~= '' then
    costs[#costs + 1] = id
    costs[#costs + 1] = ARGV[b + 14]
  end
  if ARGV[b + 13] == '1' then
    idem[#idem + 1] = '+inf'
    idem[#idem + 1] = id
  end
  if ARGV[b + 9] ~= '' then
    parents[#parents + 1] = id
    parents[#parents + 1] = ARGV[b + 9]
  end
  if ARGV[b + 7] == '1' then
    held[#held + 1] = now
    held[#held + 1] = id
    roots[#roots + 1] = id
    roots[#roots + 1] = due .. '\t' .. ARGV[b + 10]
  elseif kids == 0 then
    if due > now then
      delayed[#delayed + 1] = due
      delayed[#delayed + 1] = id
    elseif r ~= '' then
      routed[#routed + 1] = id
    else
      ready[#ready + 1] = id
    end
  end
end
chunked('HSET', K.jobs, jobs)
chunked('HSET', K.meta, meta)
chunked('HSET', K.route, route)
if #costs > 0 then
  chunked('HSET', K.cost, costs)
  redis.call('HSET', K.cfg, 'costs', '1')
end
chunked('ZADD', K.expires, expiry)
if #expiry > 0 then redis.call('HSET', K.cfg, 'expires', '1') end
chunked('HSET', K.fwait, waiting)
chunked('HSET', K.fparent, parents)
chunked('ZADD', K.fhold, held)
chunked('HSET', K.froot, roots)
chunked('ZADD', K.idem, idem)
redis.call('HSET', K.cfg, 'flows', '1')
chunked('RPUSH', K.ready, ready)
chunked('ZADD', K.delayed, delayed)
if #routed > 0 then make_ready(K, queue_cfg(K), routed, false, now) end
if #ready > 0 or #routed > 0 or #delayed > 0 then wake(K.wake) end
history_born(K, now, redis.call('HINCRBY', K.stats, 'enqueued', n), n)
emit(K, 'enqueued', ids, nil, now)
return { 1, '' }
