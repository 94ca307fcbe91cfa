--[[ One worker round trip: recover expired leases, promote due delayed jobs, then lease up to
  ARGV[2] ready jobs (ready -> active with a deadline and a per-delivery token). Attempts are
  counted here, at delivery, so a job that kills its worker every time still ends dead.
  KEYS[1] ready list     KEYS[2] delayed zset    KEYS[3] active zset (score = lease deadline ms)
  KEYS[4] dead zset      KEYS[5] jobs hash       KEYS[6] meta hash (id -> "state|attempts|max|enqueued|token")
  KEYS[7] errors hash    KEYS[8] stats hash
  ARGV[1] lease ms   ARGV[2] most jobs to lease (0 = maintenance only)   ARGV[3] token prefix
  ARGV[4] most delayed jobs to promote (<= 1000)
  Returns: { leased, wake_in_ms }, leased = array of {id, envelope, attempt, token, enqueued ms};
  wake_in_ms = ms until the next delayed job is due or a lease expires (0 = look again now, always
  so when jobs were leased), -1 if nothing is pending. ]]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)

local function parse(m)
  local s, a, mx, enq = string.match(m, '^(%a)|(%d+)|(%d+)|(%d+)|')
  return s, tonumber(a), mx, enq
end

local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 100)
local recovered, died = 0, 0
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[3], id)
  local m = redis.call('HGET', KEYS[6], id)
  if m then
    local _, att, mx, enq = parse(m)
    if att >= tonumber(mx) then
      redis.call('ZADD', KEYS[4], now, id)
      redis.call('HSET', KEYS[6], id, 'x|' .. att .. '|' .. mx .. '|' .. enq .. '|')
      redis.call('HSET', KEYS[7], id, 'lease expired on attempt ' .. att .. ' of ' .. mx)
      died = died + 1
    else
      redis.call('RPUSH', KEYS[1], id)
      redis.call('HSET', KEYS[6], id, 'q|' .. att .. '|' .. mx .. '|' .. enq .. '|')
      recovered = recovered + 1
    end
  end
end
if died > 0 then redis.call('HINCRBY', KEYS[8], 'failed', died) end
if recovered > 0 then redis.call('HINCRBY', KEYS[8], 'recovered', recovered) end

local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[4]))
if #due > 0 then
  redis.call('ZREM', KEYS[2], unpack(due))
  redis.call('RPUSH', KEYS[1], unpack(due))
end

local leased = {}
local want = tonumber(ARGV[2])
if want > 0 then
  local ids = redis.call('LPOP', KEYS[1], want)
  if ids then
    local deadline = now + tonumber(ARGV[1])
    for i, id in ipairs(ids) do
      local env = redis.call('HGET', KEYS[5], id)
      local m = redis.call('HGET', KEYS[6], id)
      if env and m then
        local _, att, mx, enq = parse(m)
        att = att + 1
        local tok = ARGV[3] .. i
        redis.call('HSET', KEYS[6], id, 'a|' .. att .. '|' .. mx .. '|' .. enq .. '|' .. tok)
        redis.call('ZADD', KEYS[3], deadline, id)
        leased[#leased + 1] = { id, env, att, tok, enq }
      end
    end
  end
end

-- A worker that got jobs comes straight back; only an empty-handed one needs to know when to.
if #leased > 0 then return { leased, 0 } end
local wake = -1
if redis.call('LLEN', KEYS[1]) > 0 then
  wake = 0
else
  local nd = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if nd[2] then wake = math.max(0, tonumber(nd[2]) - now) end
  local na = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  if na[2] then
    local w = math.max(0, tonumber(na[2]) - now)
    if wake < 0 or w < wake then wake = w end
  end
end
return { leased, wake }
