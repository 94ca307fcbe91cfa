--[[ One worker round trip: complete the acks the worker has gathered, recover expired leases (a
  job whose cancel was requested ends cancelled instead), drop cancel requests that outlived their
  deliveries, promote due delayed jobs, then lease up to ARGV[2] jobs (into the active zset with a
  deadline):
  first plain ready jobs, then prioritized ones (lowest priority number first), then one job per
  group round-robin over the groups that can start one. A paused queue leases nothing, nor does
  one backing off (snooze_job.lua) until its time; its
  concurrency cap and start rate bound how many start (docs/data-model.md, "Queue control"). Attempts
  are counted at delivery: a delivery whose lease expires counts as an attempt, so a job that
  kills its worker every time still ends dead. When ready jobs are left over and no wake-up is
  pending, one is left for another idle worker. (docs/data-model.md describes the meta format, lease
  tokens and the policy.)
  KEYS[1] ready list     KEYS[2] delayed zset    KEYS[3] active zset (score = lease deadline ms; + ANCHOR)
  KEYS[4] dead zset      KEYS[5] jobs hash       KEYS[6] meta hash
  KEYS[7] errors hash    KEYS[8] stats hash      KEYS[9] done list (retained completed ids)
  KEYS[10] wake list     KEYS[11] idem zset      KEYS[12] route hash
  KEYS[13] prio zset     KEYS[14] grot list       KEYS[15] gheld set
  KEYS[16] gstate hash   KEYS[17] gcfg hash      KEYS[18] gwait zset
  KEYS[19] cfg hash      KEYS[20] rl zset        KEYS[21] g (group key prefix)
  KEYS[22] gr (group rate-log key prefix)
  KEYS[23] gset set (the groups in the rotation)
  KEYS[24] p (priority list key prefix)
  KEYS[25] results hash  KEYS[26] progress hash  KEYS[27] waiters hash
  KEYS[28] fin (prefix of the waiters' notice lists)
  KEYS[29] cancel set
  KEYS[30] dd (dedup key prefix)   KEYS[31] dkey hash
  KEYS[32] events stream   KEYS[33] metrics hash   KEYS[34] workers zset
  KEYS[35] ghost hash (entries left by cancelled ready jobs)   KEYS[36] expires zset
  KEYS[37] fparent hash   KEYS[38] fout list   KEYS[39] fk (prefix of flow children's results)
  KEYS[40] fl (prefix of flow children's lists)   KEYS[41] fwait hash   KEYS[42] fhold zset
  KEYS[43] winfo hash   KEYS[44] hist (prefix of the history's day hashes)
  KEYS[45] rat hash (when jobs made ready after their enqueue became ready)
  KEYS[46] attempts hash   KEYS[47] logs hash   KEYS[48] lg (prefix of job log lists)
  KEYS[49] tasks set (task names tracked)   KEYS[50] tstat hash (per-task totals)
  KEYS[51] tm (prefix of the per-task 10-minute snapshots)   KEYS[52] th (of the hourly ones)
  KEYS[53] cost hash (id -> cost, for jobs whose cost is not 1)
  ARGV[1] lease ms   ARGV[2] most jobs to lease (0 = maintenance only), or "<n>|<limiter>": n
  taken from the queue's shared limiter (a queue that names one leases nothing without it); either
  may follow n with "~<cap>": the most jobs leased from one group that names a shared limiter
  ARGV[3] most expired leases to recover (0: this call skips the upkeep that goes by time:
  expired leases, stale cancel requests and the completed jobs' age; a worker busy leasing does
  it a few times a second, not on every call)   ARGV[4] most delayed jobs to promote (<= 1000)
  ARGV[5] queue policy (see docs/data-model.md)
  ARGV[6] the worker's report ("" none; "<worker id>|<field>=<n>,...[|<per-task counts>]", see
  "Metrics" and "Per-task metrics"); with it, the first report of each minute writes the queue's
  totals into its history (see "History"), of each 10 minutes and hour the per-task totals
  ARGV[7] the worker's registry entry, with a report only ("" none; "-" the worker stops: its
  entry goes; else its encoded entry, stored under the report's worker id, see "Workers")
  ARGV[8], ARGV[9], ...: acks, pairs of job id, lease token (a token ending in "+" is followed by
  the job's result, see docs/data-model.md)
  Returns: { leased, wake_in_ms, acks, lost, now, bits, limiter, glim }, leased = flat
  array of id, envelope, meta per job (docs/data-model.md: the attempt under way is attempts + 1, the
  lease token "enqueued.x"); wake_in_ms = ms until a delayed job is due, a lease expires or a rate limit
  allows the next start (0 = look again now, always so when jobs were leased), -1 if nothing is
  pending; acks = per ack pair, 1 completed, 2 already completed, -1 lease lost; lost = popped ids
  whose envelope or meta was missing (removed and counted) plus unreadable records
  dead-lettered; now = the Redis time (ms) of the leases (the jobs' start); bits: 1 the queue
  (shard) has schedules, 2 its outbox holds flow notices to relay, 4 it holds flow jobs;
  limiter = the shared limiter the queue names ("" none; see ARGV[2]); glim = flat array of job id,
  limiter name for each job leased whose group names a shared limiter (empty when none): the
  caller takes room for them from their limiter, and gives back those it gets none for
  (release_job.lua, ARGV[3]). ]]
--#include lib/chunked.lua
--#include lib/base.lua
--#include lib/meta.lua
--#include lib/policy.lua
--#include lib/cfg.lua
--#include lib/promote.lua
--#include lib/workers.lua
--#include lib/history.lua
--#include lib/tasks.lua
--#include lib/active.lua
--#include lib/events.lua
--#include lib/dedup.lua
--#include lib/forget.lua
--#include lib/cancel.lua
--#include lib/route.lua
--#include lib/ghosts.lua
--#include lib/control.lua
--#include lib/costs.lua
--#include lib/retention.lua
--#include lib/bury.lua
--#include lib/acks.lua
--#include lib/parents.lua
--#K
local now = now_ms()
local P = policy(ARGV[5])
local C = queue_cfg(K)
-- Which optional keys exist, in one call (none of them is created by this script): priorities
-- and groups in use, cancel requests pending, explicit ids remembered, delayed jobs, jobs made
-- ready after their enqueue (see "Latency"), jobs' costs (not looked up for a queue that never
-- had a job with a cost). A queue skips every step about a feature whose key does not exist.
local names = { 'route', 'cancel', 'idem', 'delayed', 'rat' }
if not K.no_costs then names[#names + 1] = 'cost' end
local has = exist_bits(K, names)
if K.no_costs then has.cost = false end
local routed, creq = has.route, has.cancel
local upkeep = ARGV[3] ~= '0'
local acks = complete_leases(K, C, now, P, 8, upkeep)
-- The worker's report: it is alive, and what its handlers took (see "Metrics").
if ARGV[6] ~= '' then
  local wid, fields, tasks = string.match(ARGV[6], '^([^|]*)|([^|]*)|?(.*)$')
  if ARGV[7] == '-' then
    redis.call('ZREM', K.workers, wid)
    redis.call('HDEL', K.winfo, wid)
  else
    worker_seen(K, now, wid, ARGV[7])
  end
  if fields ~= '' then
    for f, n in string.gmatch(fields, '([^,=]+)=(%d+)') do redis.call('HINCRBY', K.metrics, f, n) end
  end
  forget_workers(K, now)
  snapshot_history(K, now)
  snapshot_tasks(K, now)
  if tasks ~= '' then file_tasks(K, tasks) end
end
-- Jobs to dead-letter: unreadable or out of attempts (dead), past their deadline to start (past).
local dead, gone, bad, past = {}, {}, 0, {}

-- Expired leases: retried (back to their queue) or dead-lettered.
local expired = {}
if upkeep then
  expired = redis.call('ZRANGEBYSCORE', K.active, '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
end
local recovered, retry, cancelled, cancelled_enq, lost_recs = 0, {}, {}, {}, {}
local exp_routes = routes(K, expired)
for i, id in ipairs(expired) do
  redis.call('ZREM', K.active, id)
  local g = exp_routes and exp_routes[i] and select(2, parse_route(exp_routes[i]))
  if g and g ~= '' then group_done(K, C, g, now) end
  local m = redis.call('HGET', K.meta, id)
  if m then
    local s, a, mx, enq, x = parse_meta(m)
    if not s then
      dead[#dead + 1] = unreadable(id, m)
      bad = bad + 1
    elseif creq and cancel_requested(K, id) then
      cancelled[#cancelled + 1] = id
      cancelled_enq[#cancelled_enq + 1] = enq
    else
      local att = tonumber(a) + 1
      x = tonumber(x) + 1
      lost_recs[#lost_recs + 1] = { id, { n = att, e = now, o = 'lost',
        err = 'lease expired: its worker stopped or lost Redis' } }
      if att >= tonumber(mx) then
        dead[#dead + 1] = { id, meta_of('x', att, mx, enq, x),
          'lease expired on attempt ' .. att .. ' of ' .. mx }
      else
        retry[#retry + 1] = id
        redis.call('HSET', K.meta, id, meta_of('q', att, mx, enq, x))
        recovered = recovered + 1
      end
    end
  else
    gone[#gone + 1] = id
  end
end
add_attempts(K, lost_recs)
make_ready(K, C, retry, false, now)
if #retry > 0 and events_max(K) then
  local why = {}
  for i = 1, #retry do why[i] = 'lease expired' end
  emit(K, 'retried', retry, why, now)
end
end_cancelled(K, cancelled, cancelled_enq)
if creq and upkeep then
  -- Requests of jobs no longer active (completed or released before their worker saw them).
  local reqs = redis.call('SRANDMEMBER', K.cancel, 100)
  if #reqs > 0 then
    local held = chunked_read('ZMSCORE', K.active, reqs)
    local stale = {}
    for i, id in ipairs(reqs) do
      if not held[i] then stale[#stale + 1] = id end
    end
    chunked('SREM', K.cancel, stale)
  end
end
if recovered > 0 then redis.call('HINCRBY', K.stats, 'recovered', recovered) end

-- Due delayed jobs, and groups whose rate window moved on.
local promoted = has.delayed and promote_due(K, C, now, tonumber(ARGV[4])) or 0
if routed then
  -- At most 100 a call: the rest are due too, so the worker looks again at once.
  local rewoken = redis.call('ZRANGEBYSCORE', K.gwait, '-inf', now, 'LIMIT', 0, 100)
  if #rewoken > 0 then
    chunked('ZREM', K.gwait, rewoken)
    groups_offer(K, C, rewoken, now, false)
  end
end
-- A settings change's sweep of the held groups (set_queue_control.lua, set_group_control.lua): the next 100 are offered.
if C.recheck then
  local r = redis.call('SSCAN', K.gheld, C.recheck, 'COUNT', 100)
  if #r[2] > 0 then groups_offer(K, C, r[2], now, false) end
  if r[1] == '0' then
    redis.call('HDEL', K.cfg, 'recheck')
    C.recheck = nil
  else
    redis.call('HSET', K.cfg, 'recheck', r[1])
  end
end

-- How many may start now: the batch, within the queue's concurrency cap and start rate. A queue
-- that names a shared limiter starts only what the caller took from it ("<n>|<limiter>"): none
-- for a caller that took from no limiter or another (the reply names the queue's).
-- "<n>[~<cap>][|<limiter>]": cap, the most this call takes from one group that names a shared
-- limiter (the caller's guess of the room the limiter has: what it gets none for it gives back).
local asked, gcap, by = string.match(ARGV[2], '^(%d+)~?(%d*)(.*)$')
asked, gcap = tonumber(asked), tonumber(gcap)
local want = asked
if by ~= '' then
  want = (not C.limiter or string.sub(by, 2) == C.limiter) and asked or 0
elseif C.limiter then
  want = 0
end
local rate_n, rate_ms, rate_b = parse_rate(C.rate)
-- A token bucket's state ("tat", see lib/control.lua), read only when the rate is one.
local rtat = rate_b and redis.call('HGET', K.cfg, 'rtat')
-- With jobs' costs (lib/costs.lua), the bucket's tokens each job popped takes.
local Q = queue_bucket(K, rtat, rate_n, rate_ms, rate_b)
local rate_in, capped = 0, false
if C.paused then want = 0 end
if C.until_ms then
  -- Backing off (snooze_job.lua): nothing starts until then; the field goes once it passed.
  if C.until_ms > now then
    want, rate_in = 0, C.until_ms - now
  else
    redis.call('HDEL', K.cfg, 'until')
    C.until_ms = nil
  end
end
if want > 0 and C.max_active then
  local running = redis.call('ZCOUNT', K.active, '-inf', '(+inf')
  capped = running >= C.max_active
  want = math.max(0, math.min(want, C.max_active - running))
end
if want > 0 and rate_b then
  local room, wait = bucket_room(rtat, rate_n, rate_ms, rate_b, 0, now)
  want, rate_in = math.min(want, room), wait or 0
elseif want > 0 and rate_n then
  rate_in = rate_wait(K.rl, rate_n, rate_ms, now)
  if rate_in > 0 then
    want = 0
  else
    want = math.min(want, rate_n - redis.call('ZCARD', K.rl))
  end
end

-- The jobs to lease, in order: plain ready ones, prioritized ones, then groups round-robin.
local ids, grp = {}, {}
local popped, full = false, false
-- Groups this fetch took out of the rotation for want of room (paused, at a limit, rate).
local held = 0
-- Whether the walk of the rotation stopped at its budget with jobs still wanted: the groups it
-- passed were emptied or held, and those behind them have not been looked at.
local unwalked = false
if want > 0 then
  local got = redis.call('LPOP', K.ready, want)
  if got then
    popped = true
    if C.ghosts > 0 then got = live_ready(K, got, want) end
    got = fit_list(K, C, Q, K.ready, got, now)
    for _, id in ipairs(got) do ids[#ids + 1] = id end
  end
  -- A job whose cost does not fit stops the queue until its tokens are back.
  if Q and Q.wait then want = #ids end
  if #ids < want and routed then
    -- Prioritized: the lowest priority number's list first.
    local took = 0
    for _ = 1, 100 do
      local need = want - #ids
      if need <= 0 then break end
      local lvl = redis.call('ZRANGE', K.prio, 0, 0)[1]
      if not lvl then break end
      local got = redis.call('LPOP', K.p .. lvl, need)
      local emptied = not got or #got < need
      if got then
        popped = true
        if C.pghosts > 0 then got = drop_ghosts(K, got, 'p' .. lvl .. '|', 'pghosts') end
        got = fit_list(K, C, Q, K.p .. lvl, got, now)
        for _, id in ipairs(got) do ids[#ids + 1] = id end
        took = took + #got
      end
      if Q and Q.wait then
        emptied, want = false, #ids
      end
      if emptied then redis.call('ZREM', K.prio, lvl) end
    end
    if took > 0 then
      popped = true
      redis.call('HINCRBY', K.stats, 'pready', -took)
    end
    -- Groups: one job per group per round, so one busy group cannot starve the others.
    if #ids < want then
      local started, sgroups, total_started = {}, {}, 0
      local limited = groups_limited(K, C)
      -- Groups looked at beyond those that give a job: at most 200 per call, so a rotation full
      -- of groups without room (paused, at a limit) costs calls, not one long call; the worker
      -- looks again at once (see wake_in below).
      local budget = want + 200
      -- Groups that gave their cap of jobs (gcap): back in the rotation after this call's rounds.
      local later = {}
      unwalked = true
      for _ = 1, 100 do
        local need = math.min(want - #ids, budget)
        if need <= 0 then break end
        budget = budget - need
        local heads = redis.call('LPOP', K.grot, need)
        if not heads then
          unwalked = false
          break
        end
        local m = #heads
        -- Fewer groups than jobs wanted (the rotation is now empty): each gives several.
        local per = m < need and math.ceil(need / m) or 1
        local back, gone, front = {}, {}, {}
        if per == 1 and not limited and not Q then
          -- The common case, kept lean (a call per job is the cost of a group): one job from
          -- each group, each back at the end of the rotation.
          for _, g in ipairs(heads) do
            local j = redis.call('ZPOPMIN', K.g .. g, 1)[1]
            if j then
              ids[#ids + 1] = j
              back[#back + 1] = g
              grp[j] = g
              if started[g] then
                started[g] = started[g] + 1
              else
                started[g] = 1
                sgroups[#sgroups + 1] = g
              end
            else
              gone[#gone + 1] = g
            end
          end
          total_started = total_started + #back
        else
          -- The jobs taken, by turn (each group's first, then each one's second, ...), so a
          -- batch that takes several per group still starts them round-robin.
          local turns, taken = {}, 0
          for _, g in ipairs(heads) do
            local take = math.min(per, need - taken)
            local room, wait, cut, gtok = math.huge, nil, nil, nil
            if limited then
              room, wait = group_room(K, C, g, now)
              take = math.min(take, room)
            end
            if Q and Q.wait then take = 0 end
            local capped = gcap and limited and group_cfg(K, C, g).limiter
            if capped then take = math.min(take, gcap - (started[g] or 0)) end
            local n = 0
            if take > 0 then
              local got = redis.call('ZPOPMIN', K.g .. g, take)
              if has.cost and (Q or limited) then got, cut, wait, gtok = fit_group(K, C, Q, g, got, now) end
              n = #got / 2
              for k = 1, #got, 2 do
                local t = (k + 1) / 2
                turns[t] = turns[t] or {}
                turns[t][#turns[t] + 1] = got[k]
                grp[got[k]] = g
              end
              taken = taken + n
            end
            if n > 0 then
              total_started = total_started + n
              if not started[g] then
                started[g] = 0
                sgroups[#sgroups + 1] = g
              end
              started[g] = started[g] + n
              if limited then
                C.act[g] = group_active(K, C, g) + n
                C.rs[g] = (C.rs[g] or 0) + (gtok or n)
              end
            end
            if cut == 'g' then
              -- Its next job's cost is more than its bucket holds now: it waits for the tokens.
              group_hold(K, g, now, wait)
              held = held + 1
            elseif Q and Q.wait and (cut or n == 0) then
              -- The queue's bucket stopped the fetch: it keeps its place in the rotation.
              front[#front + 1] = g
            elseif take > 0 and n < take then
              -- Emptied: it leaves the rotation (its next job brings it back).
              gone[#gone + 1] = g
            elseif capped and started[g] and started[g] >= gcap then
              later[#later + 1] = g
            elseif gtok and group_room(K, C, g, now) > 0 or not gtok and room - n > 0 then
              back[#back + 1] = g
            else
              -- Out of room: when this call's starts used up its rate, it waits for its window
              -- (a completion does not bring it back; the window's end does).
              if not wait and n > 0 then wait = select(2, group_room(K, C, g, now)) end
              group_hold(K, g, now, wait)
              held = held + 1
            end
          end
          for _, turn in ipairs(turns) do
            for _, id in ipairs(turn) do ids[#ids + 1] = id end
          end
        end
        -- Whether a group put back has jobs left is not looked up (a call per job): an emptied
        -- group leaves when its next turn finds nothing.
        chunked('RPUSH', K.grot, back)
        chunked('SREM', K.gset, gone)
        for i = #front, 1, -1 do redis.call('LPUSH', K.grot, front[i]) end
        if Q and Q.wait then want = #ids end
      end
      chunked('RPUSH', K.grot, later)
      if total_started > 0 then
        popped = true
        redis.call('HINCRBY', K.stats, 'gready', -total_started)
        add_group_active(K, C, started, sgroups)
      end
    end
  end
  full = #ids >= want and not (Q and Q.wait)
  if Q and Q.wait then
    rate_in = Q.wait
    if #ids == 0 then popped = false end
  end
end

-- The jobs popped no longer wait: their ready-since entries go (see "Latency"). Only while the
-- key exists (known without a call), so a queue whose jobs are all ready at enqueue pays nothing.
if #ids > 0 and key_exists(K, 'rat') then chunked('HDEL', K.rat, ids) end

-- Flat: id, envelope, meta for each job (the client reads the attempt, lease token and enqueue
-- time from the meta: parsing them here cost more than the rest of a lease).
local leased = {}
-- Jobs leased whose group names a shared limiter: id, limiter name, ... (see the reply).
local glim = {}
if #ids > 0 then
  local envs = hmget(K.jobs, ids)
  local metas = hmget(K.meta, ids)
  local taken, tmetas, starts = {}, {}, {}
  -- The groups whose rate is a token bucket with jobs leased, and how many each.
  local gtaken, gtook = {}, {}
  -- Deadlines to start by (see "Expiry"): a job past its own is not leased but dead-lettered.
  local by = not K.no_expires and chunked_read('ZMSCORE', K.expires, ids) or {}
  for i, id in ipairs(ids) do
    local env, m = envs[i], metas[i]
    local late = by[i] and now - tonumber(by[i])
    if env and m and late and late > 0 and string.find(m, '^q|%d+|%d+|%d+|%d+$') then
      if grp[id] then group_done(K, C, grp[id], now) end
      local _, a, mx, enq, x = parse_meta(m)
      past[#past + 1] = { id, meta_of('x', a, mx, enq, x),
        'expired: not started by its deadline (' .. late .. ' ms past it)' }
    elseif env and m and string.find(m, '^[qcx]|%d+|%d+|%d+|%d+$') then
      local n = #taken + 1
      taken[n], tmetas[n] = id, m
      local k = #leased
      leased[k + 1], leased[k + 2], leased[k + 3] = id, env, m
      local x = (rate_n or grp[id]) and string.match(m, '(%d+)$')
      if rate_n then
        starts[#starts + 1] = now
        starts[#starts + 1] = id .. '.' .. x
        if Q then Q.took = (Q.took or 0) + cost_in(C, id, rate_b) end
      end
      local g = grp[id]
      if g and groups_limited(K, C) then
        local gc = group_cfg(K, C, g)
        if gc.limiter then
          glim[#glim + 1] = id
          glim[#glim + 1] = gc.limiter
        end
        local gn, gms, gb = parse_rate(gc.rate)
        if gb then
          if not gtook[g] then
            gtook[g] = 0
            gtaken[#gtaken + 1] = g
          end
          gtook[g] = gtook[g] + cost_in(C, id, gb)
        elseif gn then
          -- The window's log expires with the window: a group that goes quiet leaves no key.
          redis.call('ZADD', K.gr .. g, now, id .. '.' .. x)
          redis.call('PEXPIRE', K.gr .. g, gms)
        end
      end
    else
      if grp[id] then group_done(K, C, grp[id], now) end
      if env and m then
        dead[#dead + 1] = unreadable(id, m)
        bad = bad + 1
      elseif env or m then
        gone[#gone + 1] = id
      end
    end
  end
  add_active(K.active, tostring(now + tonumber(ARGV[1])), taken)
  if events_max(K) then
    local att = {}
    for i, m in ipairs(tmetas) do att[i] = tostring(tonumber(string.match(m, '^%a|(%d+)|')) + 1) end
    emit(K, 'active', taken, att, now)
  end
  -- A fresh delivery starts without a request (one for an earlier delivery not swept yet).
  if creq and #taken > 0 then chunked('SREM', K.cancel, taken) end
  for _, g in ipairs(gtaken) do
    local c = group_cfg(K, C, g)
    local gn, gms = parse_rate(c.rate)
    if c.tat == nil then c.tat = redis.call('GET', group_bucket_key(K, g)) end
    local tat = bucket_take(c.tat, gn, gms, gtook[g], now)
    -- Past its "tat" a bucket is full, as with no key: a group that goes quiet leaves none.
    redis.call('SET', group_bucket_key(K, g), tat, 'PX', math.max(1, math.ceil(tat - now)))
  end
  if #starts > 0 and rate_b then
    redis.call('HSET', K.cfg, 'rtat', bucket_take(rtat, rate_n, rate_ms, Q and Q.took or #starts / 2, now))
  elseif #starts > 0 then
    chunked('ZADD', K.rl, starts)
    redis.call('PEXPIRE', K.rl, rate_ms)
  end
end
if #gone > 0 then
  -- A job lost for missing data frees its dedup key; its waiters see it gone at their next look.
  release_dedup(K, gone)
  tell_parents_all(K, gone, 'l')
  if not K.no_waiters then chunked('HDEL', K.waiters, gone) end
  forget(K, gone)
  redis.call('HINCRBY', K.stats, 'lost', #gone)
end
bury(K, now, P, dead)
bury(K, now, P, past, 'expired')
local lost = #gone + bad

-- Ready jobs left over: hand a wake-up to another idle worker, unless one is already pending
-- (looked at first: while every worker is busy, one stays pending and this is one call).
if (full or promoted > 0 or recovered > 0) and not C.paused and not C.until_ms
    and redis.call('LLEN', K.wake) == 0
    and (redis.call('LLEN', K.ready) > 0
      or routed and (redis.call('ZCARD', K.prio) > 0 or redis.call('LLEN', K.grot) > 0)) then
  wake(K.wake)
end

-- A worker that got jobs comes straight back; only an empty-handed one needs to know when to.
-- Bits: 1 the queue has schedules, 2 its outbox has flow notices to relay, 4 it holds flow jobs.
local bits = C.sched and 1 or 0
if not K.no_flows then
  local f = redis.call('EXISTS', K.fout, K.fout, K.fhold)
  if f == 1 then bits = bits + 4 elseif f >= 2 then bits = bits + 2 + (f == 3 and 4 or 0) end
end
if #leased > 0 then return { leased, 0, acks, lost, now, bits, C.limiter or '', glim } end
-- The last acks of a busy spell (sent without upkeep) still trim the completed jobs by age.
if not upkeep and #acks > 0 then trim_done_aged(K, now, P) end
local wake_in = -1
local limited = C.paused or capped or rate_in > 0
-- Ids popped but none leasable (data gone): look again. Nothing popped while wanting some: there
-- was nothing to lease. A maintenance call (nothing wanted) looks again if jobs are ready.
if popped or (not limited and asked == 0 and redis.call('LLEN', K.ready) > 0) then
  wake_in = 0
elseif not limited and (C.recheck or (held > 0 or unwalked) and redis.call('LLEN', K.grot) > 0) then
  -- Groups without room were taken out of the rotation, or emptied ones dropped from it, and
  -- more are in it; or a sweep of the held groups goes on: the groups behind them may start jobs
  -- now. Each such call takes what it passed out of the rotation, so the looks end.
  wake_in = 0
else
  local function sooner(ms)
    if ms and (wake_in < 0 or ms < wake_in) then wake_in = math.max(0, ms) end
  end
  if has.delayed then
    local nd = redis.call('ZRANGE', K.delayed, 0, 0, 'WITHSCORES')
    if nd[2] then sooner(tonumber(nd[2]) - now) end
  end
  local na = redis.call('ZRANGEBYSCORE', K.active, '-inf', '(+inf', 'LIMIT', 0, 1, 'WITHSCORES')
  if na[2] then sooner(tonumber(na[2]) - now) end
  if routed then
    local gw = redis.call('ZRANGE', K.gwait, 0, 0, 'WITHSCORES')
    if gw[2] then sooner(tonumber(gw[2]) - now) end
  end
  if rate_in > 0 then sooner(rate_in) end
end
-- Flow notices waiting for their relay (the worker's task) will make parents ready: look again
-- soon, and do not take the queue for drained.
if bits % 4 >= 2 and (wake_in < 0 or wake_in > 10) then wake_in = 10 end
-- Held flow jobs are pending too: their flow's writer releases them, or a worker settles them
-- once their grace is over (lib/parents.lua).
if bits >= 4 then
  local h = redis.call('ZRANGE', K.fhold, 0, 0, 'WITHSCORES')
  if h[2] then
    local due = math.max(tonumber(h[2]) + HOLD_GRACE_MS - now, 100)
    if wake_in < 0 or wake_in > due then wake_in = due end
  end
end
return { leased, wake_in, acks, lost, now, bits, C.limiter or '', glim }
