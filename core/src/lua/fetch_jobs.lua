--[[ One worker round trip: complete the acks the worker has gathered, recover expired leases,
  promote due delayed jobs, then lease up to ARGV[2] ready jobs (into the active zset with a
  deadline). Attempts are counted at delivery: a delivery whose lease expires counts as an
  attempt, so a job that kills its worker every time still ends dead. When ready jobs are left
  over and no wake-up is pending, one is left for another idle worker (so a burst reaches every
  idle worker, one hand-over at a time). (lib_jobs.lua describes the meta format, lease tokens and
  the policy.)
  KEYS[1] ready list     KEYS[2] delayed zset    KEYS[3] active zset (score = lease deadline ms; + ANCHOR)
  KEYS[4] dead zset      KEYS[5] jobs hash       KEYS[6] meta hash
  KEYS[7] errors hash    KEYS[8] stats hash      KEYS[9] done list (retained completed ids)
  KEYS[10] wake list     KEYS[11] idem zset (explicit ids, see lib_jobs.lua)
  ARGV[1] lease ms   ARGV[2] most jobs to lease (0 = maintenance only)
  ARGV[3] most expired leases to recover   ARGV[4] most delayed jobs to promote (<= 1000)
  ARGV[5] queue policy (see lib_jobs.lua)
  ARGV[6], ARGV[7], ...: acks, pairs of job id, lease token
  Returns: { leased, wake_in_ms, acks, lost }, leased = array of {id, envelope, attempt, token,
  enqueued ms}; wake_in_ms = ms until the next delayed job is due or a lease expires (0 = look
  again now, always so when jobs were leased), -1 if nothing is pending; acks = per ack pair,
  1 completed, 2 already completed, -1 lease lost; lost = popped ids whose envelope or meta was
  missing (removed and counted) plus unreadable records dead-lettered. ]]
--#include lib_jobs.lua
local K = { ready = KEYS[1], delayed = KEYS[2], active = KEYS[3], dead = KEYS[4], jobs = KEYS[5],
  meta = KEYS[6], errors = KEYS[7], stats = KEYS[8], done = KEYS[9], wake = KEYS[10],
  idem = KEYS[11] }
local now = now_ms()
local P = policy(ARGV[5])
local acks = complete_leases(K, now, P, 6)
local dead, gone, bad = {}, {}, 0

local expired = redis.call('ZRANGEBYSCORE', K.active, '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
local recovered = 0
for _, id in ipairs(expired) do
  redis.call('ZREM', K.active, id)
  local m = redis.call('HGET', K.meta, id)
  if m then
    local s, a, mx, enq, x = parse_meta(m)
    if not s then
      dead[#dead + 1] = unreadable(id, m)
      bad = bad + 1
    else
      local att = tonumber(a) + 1
      x = tonumber(x) + 1
      if att >= tonumber(mx) then
        dead[#dead + 1] = { id, meta_of('x', att, mx, enq, x),
          'lease expired on attempt ' .. att .. ' of ' .. mx }
      else
        redis.call('RPUSH', K.ready, id)
        redis.call('HSET', K.meta, id, meta_of('q', att, mx, enq, x))
        recovered = recovered + 1
      end
    end
  else
    gone[#gone + 1] = id
  end
end
if recovered > 0 then redis.call('HINCRBY', K.stats, 'recovered', recovered) end

local due = redis.call('ZRANGEBYSCORE', K.delayed, '-inf', now, 'LIMIT', 0, tonumber(ARGV[4]))
if #due > 0 then
  chunked('ZREM', K.delayed, due)
  chunked('RPUSH', K.ready, due)
end

local leased = {}
local popped, full = false, false
local want = tonumber(ARGV[2])
if want > 0 then
  local ids = redis.call('LPOP', K.ready, want)
  if ids then
    popped, full = true, #ids == want
    local envs = hmget(K.jobs, ids)
    local metas = hmget(K.meta, ids)
    local taken = {}
    for i, id in ipairs(ids) do
      local env, m = envs[i], metas[i]
      local s, a, _, enq, x
      if m then s, a, _, enq, x = parse_meta(m) end
      if env and s then
        taken[#taken + 1] = id
        leased[#leased + 1] = { id, env, tonumber(a) + 1, token_of(enq, x), enq }
      elseif env and m then
        dead[#dead + 1] = unreadable(id, m)
        bad = bad + 1
      elseif env or m then
        gone[#gone + 1] = id
      end
    end
    add_active(K.active, tostring(now + tonumber(ARGV[1])), taken)
  end
end
if #gone > 0 then
  forget(K, gone)
  redis.call('HINCRBY', K.stats, 'lost', #gone)
end
bury(K, now, P, dead)
local lost = #gone + bad

-- Ready jobs left over: hand a wake-up to another idle worker, unless one is already pending.
if (full or #due > 0 or recovered > 0) and redis.call('LLEN', K.ready) > 0
    and redis.call('LLEN', K.wake) == 0 then
  wake(K.wake)
end

-- A worker that got jobs comes straight back; only an empty-handed one needs to know when to.
if #leased > 0 then return { leased, 0, acks, lost } end
local wake_in = -1
-- Ids popped but none leasable (data gone): look again. Nothing popped while wanting some: ready
-- is empty, no need for LLEN.
if popped or (want == 0 and redis.call('LLEN', K.ready) > 0) then
  wake_in = 0
else
  local nd = redis.call('ZRANGE', K.delayed, 0, 0, 'WITHSCORES')
  if nd[2] then wake_in = math.max(0, tonumber(nd[2]) - now) end
  local na = redis.call('ZRANGEBYSCORE', K.active, '-inf', '(+inf', 'LIMIT', 0, 1, 'WITHSCORES')
  if na[2] then
    local w = math.max(0, tonumber(na[2]) - now)
    if wake_in < 0 or w < wake_in then wake_in = w end
  end
end
return { leased, wake_in, acks, lost }
