#!lua flags=no-writes
--[[ One page of the ids of the jobs in one state, read atomically and without writing, so it
  works on a Redis at maxmemory (`get_jobs.lua` then reads the jobs themselves). The orders:
  delayed by due time, active by lease deadline, dead oldest death first, completed newest first,
  and ready in the order fetches take them (fetch_jobs.lua): the plain ready list, then each
  priority's list (lowest number first), then the groups' jobs group by group, each group's in
  the order it runs them: first the groups of the rotation in rotation order, then the groups
  held out of it (limit, pause, rate; docs/data-model.md, "Flow control") in the held set's order.
  Groups are read 1000 at a time and only until the page is full: a page's cost grows with its
  offset and length, not with the number of groups.
  KEYS[1] ready list   KEYS[2] delayed zset   KEYS[3] active zset   KEYS[4] dead zset
  KEYS[5] done list    KEYS[6] prio zset      KEYS[7] p (priority list key prefix)
  KEYS[8] grot list    KEYS[9] gheld set      KEYS[10] g (group key prefix)
  ARGV[1] state: "delayed", "ready", "active", "dead" or "completed"
  ARGV[2] jobs of the state to skip   ARGV[3] most ids to return (> 0)
  Returns: { skipped, ids }: skipped = how many jobs were skipped (fewer than ARGV[2] when the
  state holds fewer: a sharded queue skips the rest on the next shard). ]]
--#K
local state = ARGV[1]
local skip, want = tonumber(ARGV[2]), tonumber(ARGV[3])
local skipped, ids = 0, {}

-- Takes what the page needs from a run of n jobs; range(a, b) reads its jobs a..b (0-based,
-- inclusive) in order.
local function take(n, range)
  if skip >= n then
    skip = skip - n
    skipped = skipped + n
    return
  end
  local got = range(skip, math.min(n, skip + want) - 1)
  skipped = skipped + skip
  skip = 0
  for _, id in ipairs(got) do ids[#ids + 1] = id end
  want = want - #got
end

local function list(key)
  take(redis.call('LLEN', key), function(a, b) return redis.call('LRANGE', key, a, b) end)
end

local function zset(key, n)
  take(n or redis.call('ZCARD', key), function(a, b) return redis.call('ZRANGE', key, a, b) end)
end

if state == 'delayed' then
  zset(K.delayed)
elseif state == 'active' then
  -- The encoding anchor (docs/data-model.md) scores +inf, after every lease deadline: counting only
  -- finite scores leaves it out of the ranks read.
  zset(K.active, redis.call('ZCOUNT', K.active, '-inf', '(+inf'))
elseif state == 'dead' then
  zset(K.dead)
elseif state == 'completed' then
  -- The done list is oldest first: newest first counts from its end.
  take(redis.call('LLEN', K.done), function(a, b)
    local got = redis.call('LRANGE', K.done, -b - 1, -a - 1)
    local rev = {}
    for i = #got, 1, -1 do rev[#rev + 1] = got[i] end
    return rev
  end)
elseif state == 'ready' then
  list(K.ready)
  if want > 0 then
    for _, lvl in ipairs(redis.call('ZRANGE', K.prio, 0, -1)) do
      list(K.p .. lvl)
      if want <= 0 then break end
    end
  end
  local seen = {}
  local function groups(names)
    for _, g in ipairs(names) do
      if want <= 0 then return end
      if not seen[g] then
        seen[g] = true
        zset(K.g .. g)
      end
    end
  end
  local at = 0
  while want > 0 do
    local part = redis.call('LRANGE', K.grot, at, at + 999)
    groups(part)
    if #part < 1000 then break end
    at = at + 1000
  end
  local cursor = '0'
  while want > 0 do
    local r = redis.call('SSCAN', K.gheld, cursor, 'COUNT', 1000)
    groups(r[2])
    cursor = r[1]
    if cursor == '0' then break end
  end
else
  return redis.error_reply('tideq: unknown job state ' .. tostring(state))
end
return { skipped, ids }
