--[[ Enqueue jobs: ready at once (in the ready list, or by priority, or in their group's queue), or
  delayed until a due time. An id that already exists creates nothing (idempotency), nor does an
  explicit id that finished within the idempotency window, nor a job whose dedup key names a job
  (see "Dedup and debounce" in docs/data-model.md). Due times are computed with Redis TIME, never the
  client's clock.
  KEYS[1] jobs hash (id -> envelope)   KEYS[2] meta hash (id -> "state|attempts|max|enqueued ms|x", see docs/data-model.md)
  KEYS[3] ready list                   KEYS[4] delayed zset (score = due ms)
  KEYS[5] wake list                    KEYS[6] stats hash
  KEYS[7] idem zset (explicit ids, see docs/data-model.md)   KEYS[8] route hash   KEYS[9] prio zset
  KEYS[10] grot list    KEYS[11] gheld set   KEYS[12] gstate hash   KEYS[13] gcfg hash
  KEYS[14] gwait zset  KEYS[15] cfg hash   KEYS[16] g (group key prefix)
  KEYS[17] gr (group rate-log prefix)
  KEYS[18] gset set (the groups in the rotation)
  KEYS[19] p (priority list key prefix)
  KEYS[20] dd (dedup key prefix)   KEYS[21] dkey hash   KEYS[22] sched hash   KEYS[23] snext zset
  KEYS[24] events stream   KEYS[25] expires zset   KEYS[26] hist (prefix of the history's day
  hashes: the first enqueue a shard counts leaves its zero snapshot, see "History")
  KEYS[27] slast hash (schedule name -> the last job it enqueued)
  KEYS[28] cost hash (id -> cost, for jobs whose cost is not 1)
  ARGV[1] number of jobs N   ARGV[2] "1": remember explicit ids (the window is on), "0": not
  ARGV[3] schedule guard: "" or "version|slot|next|name" (a schedule's slot fires: the jobs are
    written only if the schedule is at that version and slot, which then moves to next, 0: it has
    none), or "version|||name" (run now: written only if the schedule is at that version, its
    slot unchanged); either way the first job's id becomes the schedule's last job (see
    "Schedules" in docs/data-model.md)
  ARGV[4] values per job W: 10, or 4 when every job of the call is plain (ready at once, no
    route, dedup, deadline or cost: the last six values are left out, as "0", "0", "", "", "",
    ""; each value passed costs Redis about 1,000 instructions)
  then per job W values: id, envelope, max attempts, "1" if the id was given by the caller,
    delay ms (relative to Redis now), run-at ms (absolute; 0 = use delay),
    route ("priority|group", 0 = no priority; "" for a plain job),
    dedup ("" none; "d|<ttl ms, 0 = until the job finishes>|<key>";
      debounce "b|<length of the expected id>|<expected id><key>"),
    deadline to start by ("" none; "a<ms>" that time, "r<ms>" that long after the due time; see
      "Expiry" in docs/data-model.md),
    cost ("" for 1; else the tokens it takes from a token-bucket rate, see "Queue control")
  Returns: array of N values: 1 = created, 0 = the id already existed (nothing written), a string:
  the id of the job the dedup key names (nothing created; for debounce, that job's payload and due
  time were replaced), -1 debounce: the key names another job than expected (read it again),
  -2 debounce: the expected job has started, send a new id; -3 (every job) the schedule guard
  failed (nothing written). An error while the queue is being obliterated (cfg "obliterating"):
  nothing written. ]]
--#include lib/chunked.lua
--#include lib/base.lua
--#include lib/meta.lua
--#include lib/cfg.lua
--#include lib/events.lua
--#include lib/dedup.lua
--#include lib/route.lua
--#include lib/control.lua
--#include lib/history.lua
--#K
-- The settings an enqueue reads, in one call: the obliterate mark, and the event log's length
-- (what events_max would read on its own).
local cf = redis.call('HMGET', K.cfg, 'obliterating', 'events')
if cf[1] then
  return redis.error_reply('tideq: the queue is being obliterated; enqueue again once it is done')
end
K.evmax = tonumber(cf[2]) or false
local W, B = tonumber(ARGV[4]), 5
local full = W > 4
local now = now_ms()
local nows = tostring(now)
local n = tonumber(ARGV[1])
if ARGV[3] ~= '' then
  local ver, slot, nxt, name = string.match(ARGV[3], '^(%d+)|(%d*)|(%d*)|(.*)$')
  local cur = redis.call('HGET', K.sched, name)
  if not cur or string.match(cur, '^(%d+)|') ~= ver
      or (slot ~= '' and redis.call('ZSCORE', K.snext, name) ~= slot) then
    local out = {}
    for i = 1, n do out[i] = -3 end
    return out
  end
  if slot == '' then
    -- run now: the schedule's slots stay as they are
  elseif nxt == '0' then
    redis.call('ZREM', K.snext, name)
  else
    redis.call('ZADD', K.snext, nxt, name)
  end
  redis.call('HSET', K.slast, name, ARGV[B])
end
local ids = {}
for i = 1, n do ids[i] = ARGV[B + (i - 1) * W] end
-- One HMGET for the existence check and one variadic call per key for the writes: per-job calls
-- from Lua would cost more than the work itself.
local exists = hmget(K.jobs, ids)
local remembered = {}
if redis.call('EXISTS', K.idem) == 1 then
  for i = 1, n, 1000 do
    local part = redis.call('ZMSCORE', K.idem, unpack(ids, i, math.min(i + 999, n)))
    for j = 1, #part do remembered[i + j - 1] = part[j] end
  end
end
-- Jobs with a priority or a group get their sequence numbers (their place in line) now.
local nrouted = 0
for i = 1, full and n or 0 do
  if ARGV[B + (i - 1) * W + 6] ~= '' then nrouted = nrouted + 1 end
end
local seq = nrouted > 0 and seq_block(K, nrouted) or 0
local out, seen, created = {}, {}, 0
local jobs, meta, ready, routed, delayed, idem, route = {}, {}, {}, {}, {}, {}, {}
local expiry, costs = {}, {}
-- Dedup keys taken by this call: key -> { id, ttl ms }.
local taken, ntaken = {}, 0
for i = 1, n do
  local b = B + (i - 1) * W
  local id = ids[i]
  local delay, runat, r, dd, deadline, cost = '0', '0', '', '', '', ''
  if full then
    delay, runat, r, dd = ARGV[b + 4], ARGV[b + 5], ARGV[b + 6], ARGV[b + 7]
    deadline, cost = ARGV[b + 8], ARGV[b + 9]
  end
  local dkey, dttl
  if dd ~= '' then
    local mode, num, rest = string.match(dd, '^(%a)|(%d+)|(.*)$')
    local expect
    if mode == 'b' then
      expect = string.sub(rest, 1, tonumber(num))
      dkey, dttl = string.sub(rest, tonumber(num) + 1), 0
    else
      dkey, dttl = rest, tonumber(num)
    end
    local cur = taken[dkey] and taken[dkey][1] or redis.call('GET', K.dd .. dkey)
    if mode == 'd' then
      if cur and (taken[dkey] or dttl > 0 or job_pending(K, cur)) then out[i] = cur end
    elseif (cur or '') ~= expect then
      out[i] = -1
    elseif cur and redis.call('ZSCORE', K.delayed, cur) and never_started(K, cur) then
      -- Debounce: the waiting job takes this payload and waits again from now. (One waiting for
      -- a retry has started: the next enqueue makes a new job.)
      redis.call('HSET', K.jobs, cur, ARGV[b + 1])
      local s, a, _, enq, x = parse_meta(redis.call('HGET', K.meta, cur) or '')
      if s then redis.call('HSET', K.meta, cur, meta_of(s, a, ARGV[b + 2], enq, x)) end
      local due = now + tonumber(delay)
      redis.call('ZADD', K.delayed, due, cur)
      local by = expiry_deadline(deadline, due)
      if by then
        redis.call('ZADD', K.expires, by, cur)
      else
        redis.call('ZREM', K.expires, cur)
      end
      -- Its due time may have moved earlier: idle workers must look again.
      wake(K.wake)
      out[i] = cur
    elseif cur and cur == id then
      out[i] = -2
    end
  end
  if out[i] then
    -- settled above (dedup hit or debounce)
  elseif exists[i] or remembered[i] or seen[id] then
    out[i] = 0
  else
    seen[id] = true
    if dkey then
      if not taken[dkey] then ntaken = ntaken + 1 end
      taken[dkey] = { id, dttl }
    end
    jobs[#jobs + 1] = id
    jobs[#jobs + 1] = ARGV[b + 1]
    meta[#meta + 1] = id
    meta[#meta + 1] = meta_of('q', '0', ARGV[b + 2], nows, '0')
    if r ~= '' then
      seq = seq + 1
      local p, g = parse_route_arg(r)
      route[#route + 1] = id
      route[#route + 1] = route_of(p, seq, g)
    end
    if cost ~= '' then
      costs[#costs + 1] = id
      costs[#costs + 1] = cost
    end
    local due = now + tonumber(delay)
    if runat ~= '0' then due = tonumber(runat) end
    local by = expiry_deadline(deadline, due)
    if by then
      expiry[#expiry + 1] = by
      expiry[#expiry + 1] = id
    end
    if due > now then
      delayed[#delayed + 1] = due
      delayed[#delayed + 1] = id
    elseif r ~= '' then
      routed[#routed + 1] = id
    else
      ready[#ready + 1] = id
    end
    if ARGV[2] == '1' and ARGV[b + 3] == '1' then
      idem[#idem + 1] = '+inf'
      idem[#idem + 1] = id
    end
    created = created + 1
    out[i] = 1
  end
end
if ntaken > 0 then
  local owned = {}
  for key, t in pairs(taken) do
    if t[2] > 0 then
      redis.call('SET', K.dd .. key, t[1], 'PX', t[2])
    else
      redis.call('SET', K.dd .. key, t[1])
      owned[#owned + 1] = t[1]
      owned[#owned + 1] = key
    end
  end
  if #owned > 0 then
    chunked('HSET', K.dkey, owned)
    redis.call('HSET', K.cfg, 'dedup', '1')
  end
end
if #jobs > 0 then
  chunked('HSET', K.jobs, jobs)
  chunked('HSET', K.meta, meta)
  chunked('HSET', K.route, route)
  chunked('RPUSH', K.ready, ready)
  chunked('ZADD', K.delayed, delayed)
  chunked('ZADD', K.idem, idem)
  if #expiry > 0 then
    chunked('ZADD', K.expires, expiry)
    redis.call('HSET', K.cfg, 'expires', '1')
  end
  if #costs > 0 then
    chunked('HSET', K.cost, costs)
    redis.call('HSET', K.cfg, 'costs', '1')
  end
  if #routed > 0 then make_ready(K, queue_cfg(K), routed, false, now) end
  wake(K.wake)
  history_born(K, now, redis.call('HINCRBY', K.stats, 'enqueued', created), created)
  if events_max(K) then
    local made = {}
    for i = 1, #jobs, 2 do made[#made + 1] = jobs[i] end
    emit(K, 'enqueued', made, nil, now)
  end
end
return out
