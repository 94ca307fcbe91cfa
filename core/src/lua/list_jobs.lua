#!lua flags=no-writes
--[[ One page of the ids of the jobs in one state, read atomically and without writing, so it
  works on a Redis at maxmemory (`get_jobs.lua` then reads the jobs themselves). The orders:
  delayed by due time, active by lease deadline, dead oldest death first, completed newest first,
  and ready in the order fetches take them (fetch_jobs.lua): the plain ready list, then each
  priority's list (lowest number first), then the groups' jobs group by group, each group's in
  the order it runs them: first the groups of the rotation in rotation order, then the groups
  held out of it (limit, pause, rate; docs/data-model.md, "Queue control") in the held set's order.
  Groups are read only until the page is full, and one call counts at most ARGV[5] groups and
  priorities (one LLEN or ZCARD each): past that it returns where to go on, and the caller calls
  again from there (each call O(ARGV[5] + page), whatever the offset or the number of groups).
  KEYS[1] ready list   KEYS[2] delayed zset   KEYS[3] active zset   KEYS[4] dead zset
  KEYS[5] done list    KEYS[6] prio zset      KEYS[7] p (priority list key prefix)
  KEYS[8] grot list    KEYS[9] gheld set      KEYS[10] g (group key prefix)
  KEYS[11] gset set
  ARGV[1] state: "delayed", "ready", "active", "dead" or "completed"
  ARGV[2] jobs of the state to skip   ARGV[3] most ids to return (> 0)
  ARGV[4] ready only: where the last call stopped ("" the start; else "p|<last priority
  counted>", "g|<next index in grot>" or "h|<SSCAN cursor of gheld>")
  ARGV[5] ready only: most groups and priorities to count in this call
  Returns: { skipped, ids, where to go on or false }: skipped = how many jobs were skipped (fewer
  than ARGV[2] when the state holds fewer: a sharded queue skips the rest on the next shard);
  where to go on is set only when this call counted its share of groups before the page was full
  and the state's end was reached. ]]
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
  local seg, pos = string.match(ARGV[4] or '', '^(%a)|(.*)$')
  local most = tonumber(ARGV[5]) or 1000
  local counted = 0
  if not seg then
    list(K.ready)
    seg, pos = 'p', ''
  end
  if seg == 'p' then
    -- The priorities after the last one counted, lowest first.
    local from = pos == '' and '-inf' or '(' .. pos
    local levels = redis.call('ZRANGE', K.prio, from, '+inf', 'BYSCORE', 'LIMIT', 0, most)
    for _, lvl in ipairs(levels) do
      if want <= 0 then return { skipped, ids, false } end
      list(K.p .. lvl)
      counted = counted + 1
      pos = lvl
    end
    if #levels == most then return { skipped, ids, 'p|' .. pos } end
    seg, pos = 'g', '0'
  end
  -- The rotation's groups in turn; a call counts at most `most` of them.
  if seg == 'g' then
    local at = tonumber(pos) or 0
    while want > 0 do
      local n = math.min(1000, most - counted)
      if n <= 0 then return { skipped, ids, 'g|' .. at } end
      local part = redis.call('LRANGE', K.grot, at, at + n - 1)
      for _, g in ipairs(part) do
        if want <= 0 then break end
        zset(K.g .. g)
        counted = counted + 1
        at = at + 1
      end
      if #part < n then break end
    end
    seg, pos = 'h', '0'
  end
  -- Then the held groups (a group in both is the rotation's, counted already).
  local cursor = pos
  while want > 0 do
    if counted >= most then return { skipped, ids, 'h|' .. cursor } end
    local r = redis.call('SSCAN', K.gheld, cursor, 'COUNT', 100)
    for _, g in ipairs(r[2]) do
      if want <= 0 then break end
      if redis.call('SISMEMBER', K.gset, g) == 0 then
        zset(K.g .. g)
        counted = counted + 1
      end
    end
    cursor = r[1]
    if cursor == '0' then break end
  end
else
  return redis.error_reply('tideq: unknown job state ' .. tostring(state))
end
return { skipped, ids, false }
