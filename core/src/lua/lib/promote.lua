-- lib/promote.lua: Delayed jobs made ready once due (docs/data-model.md, "Latency").
--#include lib/control.lua
--#include lib/metrics.lua

-- Makes the jobs due by `now` ready, at most `max`, the longest due first; returns how many.
-- Redis formats each score it returns and Lua parses it back (about 5,000 instructions a job),
-- so a run of more than 16 due at one instant (a burst; a schedule's jobs) is read without them
-- once its first and last scores are found equal: every one of them is ready since that instant.
local function promote_due(K, C, now, max)
  local raw = redis.call('ZRANGEBYSCORE', K.delayed, '-inf', now, 'WITHSCORES', 'LIMIT', 0,
    math.min(max, 17))
  local n = #raw / 2
  local due, since
  if n == 17 then
    n = math.min(redis.call('ZCOUNT', K.delayed, '-inf', now), max)
    local first = raw[2]
    if redis.call('ZRANGE', K.delayed, n - 1, n - 1, 'WITHSCORES')[2] == first then
      due, since = redis.call('ZRANGE', K.delayed, 0, n - 1), first
      local late = now - tonumber(first)
      file_histogram_counts(K, 'lt', { [late] = n }, n, late * n)
    else
      raw = redis.call('ZRANGE', K.delayed, 0, n - 1, 'WITHSCORES')
    end
  end
  if n == 0 then return 0 end
  if not due then
    local late = {}
    due, since = {}, {}
    for i = 1, #raw, 2 do
      due[#due + 1] = raw[i]
      late[#late + 1] = now - tonumber(raw[i + 1])
      -- Ready since its due time, however late this promotion (see "Latency").
      since[#since + 1] = raw[i + 1]
    end
    file_histogram(K, 'lt', late)
  end
  -- They are the zset's first n (by score): removed by rank, no lookup per member.
  redis.call('ZREMRANGEBYRANK', K.delayed, 0, n - 1)
  make_ready(K, C, due, false, now, since)
  return n
end
