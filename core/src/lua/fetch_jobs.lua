--[[ One worker round trip: complete the acks the worker has gathered, recover expired leases,
  promote due delayed jobs, then lease up to ARGV[2] ready jobs (into the active zset with a
  deadline). Attempts are counted at delivery: a delivery whose lease expires counts as an
  attempt, so a job that kills its worker every time still ends dead. (lib_jobs.lua describes
  the meta format and lease tokens.)
  KEYS[1] ready list     KEYS[2] delayed zset    KEYS[3] active zset (score = lease deadline ms; + ANCHOR)
  KEYS[4] dead zset      KEYS[5] jobs hash       KEYS[6] meta hash
  KEYS[7] errors hash    KEYS[8] stats hash      KEYS[9] done list (retained completed ids)
  ARGV[1] lease ms   ARGV[2] most jobs to lease (0 = maintenance only)
  ARGV[3] most expired leases to recover   ARGV[4] most delayed jobs to promote (<= 1000)
  ARGV[5] keep last N completed   ARGV[6] keep completed for ms (see complete_jobs)
  ARGV[7], ARGV[8], ...: acks, pairs of job id, lease token
  Returns: { leased, wake_in_ms, acks }, leased = array of {id, envelope, attempt, token,
  enqueued ms}; wake_in_ms = ms until the next delayed job is due or a lease expires (0 = look
  again now, always so when jobs were leased), -1 if nothing is pending; acks = per ack pair,
  1 completed or -1 lease lost. ]]
--#include lib_jobs.lua
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)

local acks = complete_leases({ active = KEYS[3], done = KEYS[9], jobs = KEYS[5], meta = KEYS[6],
  errors = KEYS[7], stats = KEYS[8] }, now, tonumber(ARGV[5]), tonumber(ARGV[6]), 7)

local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
local recovered, died = 0, 0
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[3], id)
  local m = redis.call('HGET', KEYS[6], id)
  if m then
    local _, a, mx, enq, x = parse_meta(m)
    local att = tonumber(a) + 1
    x = tonumber(x) + 1
    if att >= tonumber(mx) then
      redis.call('ZADD', KEYS[4], now, id)
      redis.call('HSET', KEYS[6], id, meta_of('x', att, mx, enq, x))
      redis.call('HSET', KEYS[7], id, 'lease expired on attempt ' .. att .. ' of ' .. mx)
      died = died + 1
    else
      redis.call('RPUSH', KEYS[1], id)
      redis.call('HSET', KEYS[6], id, meta_of('q', att, mx, enq, x))
      recovered = recovered + 1
    end
  end
end
if died > 0 then redis.call('HINCRBY', KEYS[8], 'failed', died) end
if recovered > 0 then redis.call('HINCRBY', KEYS[8], 'recovered', recovered) end

local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[4]))
if #due > 0 then
  chunked('ZREM', KEYS[2], due)
  chunked('RPUSH', KEYS[1], due)
end

local leased = {}
local popped = false
local want = tonumber(ARGV[2])
if want > 0 then
  local ids = redis.call('LPOP', KEYS[1], want)
  if ids then
    popped = true
    local envs = hmget(KEYS[5], ids)
    local metas = hmget(KEYS[6], ids)
    local taken = {}
    for i, id in ipairs(ids) do
      local env, m = envs[i], metas[i]
      if env and m then
        local _, a, _, enq, x = parse_meta(m)
        taken[#taken + 1] = id
        leased[#leased + 1] = { id, env, tonumber(a) + 1, token_of(enq, x), enq }
      end
    end
    add_active(KEYS[3], tostring(now + tonumber(ARGV[1])), taken)
  end
end

-- A worker that got jobs comes straight back; only an empty-handed one needs to know when to.
if #leased > 0 then return { leased, 0, acks } end
local wake_in = -1
-- Ids popped but none leasable (data gone): look again. Nothing popped while wanting some: ready
-- is empty, no need for LLEN.
if popped or (want == 0 and redis.call('LLEN', KEYS[1]) > 0) then
  wake_in = 0
else
  local nd = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if nd[2] then wake_in = math.max(0, tonumber(nd[2]) - now) end
  local na = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(+inf', 'LIMIT', 0, 1, 'WITHSCORES')
  if na[2] then
    local w = math.max(0, tonumber(na[2]) - now)
    if wake_in < 0 or w < wake_in then wake_in = w end
  end
end
return { leased, wake_in, acks }
