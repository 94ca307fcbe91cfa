--[[ Shared helpers for the job scripts, pulled in by the include line after their headers
  (Redis scripts cannot call each other), so every script reads and writes job state the same
  way.

  Job meta (KEYS "meta" hash, one field per job): "state|attempts|max|enqueued ms|x"
    state q: pending: delayed (in the delayed zset), active (in the active zset) or else ready;
             attempts = attempts that ended (the delivery under way is attempt attempts + 1);
             x = deliveries ended so far (failed, expired or released).
    state c: completed and retained; attempts = failed attempts before the one that succeeded;
             x = finish ms.
    state x: dead; attempts = all attempts; x = deliveries ended.
  A delivery's lease token is "enqueued.x": it is derived, not stored, so leasing a job writes
  nothing but its active-zset entry. Every delivery that ends without completing bumps x, so a
  stale holder's token never matches again; `enqueued` tells apart two jobs that reused an id.
  Numbers are kept as the strings they were read as where possible: formatting a Lua number is
  a printf, and it showed up in profiles.

  A record that does not parse (damaged by hand or by a partial restore) never stops a script
  half-way: Redis keeps the writes a failing script already made, so an error after a pop would
  orphan every other job of the batch. Unreadable records are dead-lettered with an error that
  says so; a job whose envelope or meta is missing is removed and counted ("lost" in stats).

  The active zset holds ANCHOR (score +inf) besides the leased jobs. Its length (over 64 bytes)
  keeps the set in skiplist encoding: a worker's active set sits near the listpack limit (128),
  where every ZADD and ZREM would be a linear scan. Readers skip it ('(+inf' bounds).

  The idem zset remembers ids enqueued explicitly (score +inf while the job exists, then the time
  it completed or died), so an id enqueued again within the idempotency window creates nothing
  even after the job's data was trimmed; cancel and purge forget the id.

  Results and progress: `results` hash id -> what the handler returned (completed jobs only,
  written by the ack when the job is retained), `progress` hash id -> the last progress the
  handler reported (set_progress.lua). Both go with the job's other data (`forget`, cancel,
  purge); the worker caps their size. The cfg hash's fields `results`, `progress` and `waited`
  are set ("1") once a queue first stored a result, a progress or had a waiter; until then
  `queue_cfg` marks K (no_results, no_progress, no_waiters) so the hot path skips those keys, and
  a queue that never uses them pays no call for them. An ack that carries a result marks its token with a
  trailing "+" and sends the result as the next ARGV (`complete_leases`), so plain acks stay pairs.

  Waiters (wait_job.lua): `waiters` hash id -> the processes (client hubs) waiting for that
  unfinished job, as "<hub id>=<waits> ...". When a job with waiters finishes (completed,
  dead-lettered, cancelled), one notice per hub (not per wait) goes onto that hub's inbox
  `fin:<hub id>` (K.fin .. hub, short expiry), where one listener of the hub hands it to every
  local wait of the job (hub.rs), and the job's field is deleted; a job nobody waits for costs one
  EXISTS per call. A notice is "<length of id>:<id><enqueued>|<kind><data>": kind "c" completed
  without result, "r" completed with the result as data, "x" dead-lettered with the last error
  as data, "n" cancelled. `enqueued` tells a notice of an earlier job with the same id apart.

  Queue policy (one ARGV, see `policy`): "keep|keepfor|keepdead|keepdeadfor|idem|idemmax":
  completed jobs kept (count, 0 = none) and for how long (ms, 0 = no limit); dead jobs kept
  (count, -1 = no limit) and for how long (ms, 0 = no limit); idempotency window (ms, 0 = off)
  and the most finished ids it remembers (the oldest beyond are forgotten, so memory stays flat).

  Flow control (only queues that use it pay for it; `route` is empty otherwise):
    route   hash id -> "priority|sequence|group" for jobs with a priority or a group (0 = no
            priority, "" = no group; the sequence number is given at enqueue). Plain jobs have
            none and wait in the ready list.
    p:<priority> (K.p .. priority) list of the ready jobs of that priority without a group,
            oldest first; prio: zset of the priorities that have some (score = priority), so a
            lower priority number runs first and equal ones in order, at list cost per job.
    g:<group> (K.g .. group) zset of a group's ready jobs, score = priority * 2^32 + sequence
            (a group's jobs without a priority count as priority 0).
    grot    list: the group rotation, the groups that can start a job now; gset holds the same
            groups as a set. A fetch pops groups off its front, takes one job of each (several
            when there are fewer groups than jobs wanted, handed out in turns) and pushes back
            those with room for more; a group that gets jobs joins at the back. So every group
            with ready jobs gets one turn per round, whatever its size, at one call per job.
    gheld   set of groups out of the rotation for want of room (at their concurrency limit,
            paused, or rate-limited): a job of theirs ending, a resume or a settings change
            offers them their place back.
    gwait   zset: rate-limited groups -> when their window allows the next start.
    gr:<group> (K.gr .. group) zset: the group's recent starts (its rate-limit window).
    gstate  hash group -> jobs of the group running (across workers), kept for every grouped
            job (two calls per fetch and per batch of acks that start or end grouped jobs), so
            `group()` reads it in O(1) and a settings change never recounts.
    gcfg    hash "limit:<group>", "rate:<group>" ("n|ms"), "paused:<group>": per-group settings.
    cfg     hash: paused, max_active, rate ("n|ms"), glimit and grate (the groups' defaults);
            recheck, while a settings change's sweep of the held groups goes on: the SSCAN
            cursor of gheld where the next fetch goes on offering them their place (100 per
            fetch), so no call does work in proportion to the held groups.
    rl      zset: the queue's recent starts (its rate-limit window).
  Without any group limit, rate or pause (no glimit/grate, empty gcfg), nothing about a group is
  looked up: a group with ready jobs is always in the rotation (an emptied one leaves it when its
  turn finds nothing). Keys under K.g and K.gr are built
  from those declared prefixes: one per group, in the queue's hash tag like every other key.

  Cancelled ready jobs (cancel_job.lua): a job waiting in the ready list or a priority's list is
  not searched for there (LREM walks the list: 18 ms at a million jobs). Its data goes at once and
  its entry stays behind as a ghost: `ghost` (hash "r|<id>" for the ready list, "p<priority>|<id>"
  for a priority's list -> how many) marks it, and cfg `ghosts` / `pghosts` count the ghosts of
  the ready list and of the priorities' lists, so stats count the ready list as LLEN - ghosts.
  While a count is above 0, a fetch looks up the ids it pops from those lists there: the first
  entry popped of an id with a ghost is the ghost (dropped, the mark and count taken back), so
  an id enqueued again after its cancel runs once, and pops more to make up for the ghosts (a
  few pops of growing size; what it took beyond what it wanted goes back to the front). (Its older entry may be popped first; the job
  then starts at its newer entry's turn: later than FIFO would have it, never twice.) A queue
  with no ghosts pays nothing.

  Cancel requests (cancel_job.lua on an active job): the id joins the cancel set. The worker
  holding the job looks for its running jobs there (SMISMEMBER, twice a second while it runs
  any), fires their cancellation and, once the handler has returned, ends the attempt through
  fail_job.lua, which (like release_job.lua, and fetch_jobs.lua at a lease's expiry) ends a job
  with a request as cancelled: its data deleted, counted in stats as cancelled, never retried.
  An attempt that completes first completes (the work was done). A request never outlives its
  delivery: fetches drop the requests of jobs no longer active, and those of the jobs they lease.

  Dedup and debounce (enqueue_jobs.lua): `dd:<key>` (K.dd .. key) holds the id of the job a dedup
  key names. With a TTL it lives that long (PX), whatever becomes of the job. Without one (and
  for debounce) it lives while its job is pending: `dkey` (hash id -> key) lets the scripts that
  finish a job (completed, dead-lettered, cancelled) delete it, and an enqueue that finds the key
  naming a job no longer pending (gone, finished) takes it over, so a key never outlives its job.
  A dead job's dkey entry stays while it is dead (its `dd:` key is freed): a requeue takes the key
  back unless another pending job holds it by then; purging or trimming the job drops the entry.
  The cfg field `dedup` is set once a queue first used such a key; until then `queue_cfg` marks K
  (no_dedup) and finishing jobs costs nothing more.

  Schedules: `sched` hash name -> "<version>|<spec>" (the spec is MessagePack, read by the client),
  `snext` zset name -> the schedule's next slot (ms). A slot fires through enqueue_jobs.lua with a
  guard (version and slot): the job (id "<name>@<slot>") is written and the slot moves on in one
  script, so of all the processes that see a slot due, one fires it and the others' guards fail.
  upsert_schedule.lua bumps the version only when the spec changes. The cfg field `sched` is set
  while the queue (shard) has schedules: fetch_jobs.lua reports it, so an idle worker learns of
  schedules without looking for them.

  Events (only queues with events on, the cfg field `events` = the log's most entries): `events`
  is a stream; each entry is one event for a batch of jobs: fields "t" (Redis ms), "e" (the kind:
  enqueued, active, progress, completed, failed, retried, dead, cancelled), then pairs of job id
  and data ("" none; a result, an error, a progress value, an attempt). Data over 1 KiB is left
  out, and a last pair with an empty id then lists "<pair>:<size>" for each (with "r" when it is
  a result kept in `results`, which read_events.lua puts back); an entry holds at most 500 events
  and about 16 KiB of ids and data, so the log's bytes are bounded with its entries. Entry ids are
  "<n>-1" with n from the stats field `events` (one more per entry), so a reader that last saw
  entry n and finds the log starting past n + 1 knows entries were trimmed before it read them.
  `evsub` (hash name -> last entry id read) keeps named readers' places. With events off, a
  script pays one field more in its cfg read (or one HGET where it reads no cfg).

  Metrics (metrics.rs): `metrics` hash of histogram counts summed over every worker: "run:<i>"
  (handlers' run times, reported by the workers along with a fetch, at most every 15 s),
  "late:<i>" (how late the fetch script promoted delayed jobs and retries, filed as it
  promotes them), each with ":count" and a sum ("run:sum_us", "late:sum_ms"); bucket i holds
  the values up to METRIC_BOUNDS_MS[i] ms (one more above the last). `workers` zset: worker id
  -> when it last reported.

  Commands run variadic (one call per batch, at most 1000 arguments per call): a call from Lua
  costs about as much as the work it does on a few fields. ]]
local ANCHOR = '\0tideq: keeps this zset in skiplist encoding; never a job id (see lib_jobs.lua)'

-- The histograms' bucket bounds in ms (metrics.rs: BUCKETS_MS).
local METRIC_BOUNDS_MS = { 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 10000 }

-- Files values (ms) into the `metrics` hash's histogram `name` (see "Metrics").
local function file_histogram(K, name, values)
  if #values == 0 then return end
  local counts, sum = {}, 0
  for _, v in ipairs(values) do
    local b = #METRIC_BOUNDS_MS
    for i, bound in ipairs(METRIC_BOUNDS_MS) do
      if v <= bound then
        b = i - 1
        break
      end
    end
    counts[b] = (counts[b] or 0) + 1
    sum = sum + v
  end
  for b, n in pairs(counts) do redis.call('HINCRBY', K.metrics, name .. ':' .. b, n) end
  redis.call('HINCRBY', K.metrics, name .. ':count', #values)
  redis.call('HINCRBY', K.metrics, name .. ':sum_ms', math.floor(sum))
end

-- Lists whose length callers or data decide are passed to commands at most 1000 values per
-- call: Lua's unpack stops near 8,000 values, and a script that fails half-way keeps its writes.
-- Every unpack of such a list goes through `chunked` or `chunked_read` (a test checks the
-- scripts for others).
local function chunked(cmd, key, args)
  for i = 1, #args, 1000 do
    redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args)))
  end
end

-- A reading command (HMGET, ZMSCORE, SMISMEMBER) over `fields` in runs of 1000, its replies
-- joined in order.
local function chunked_read(cmd, key, fields)
  local n = #fields
  if n == 0 then return {} end
  -- One run (the common case): its reply as it is.
  if n <= 1000 then return redis.call(cmd, key, unpack(fields)) end -- bounded: 1000
  local out, k = {}, 0
  for i = 1, n, 1000 do
    local part = redis.call(cmd, key, unpack(fields, i, math.min(i + 999, n)))
    for j = 1, #part do
      k = k + 1
      out[k] = part[j]
    end
  end
  return out
end

local function hmget(key, fields)
  return chunked_read('HMGET', key, fields)
end

-- Which of the keys K[names[i]] exist, in one call: EXISTS counts a key once per mention, so
-- the i-th is named 2^(i-1) times and the count's bits say which exist. Sets K.has (name ->
-- bool), which `key_exists` then answers from: a script sets it only for keys it never creates.
local function exist_bits(K, names)
  local args = {}
  for i, n in ipairs(names) do
    for _ = 1, 2 ^ (i - 1) do args[#args + 1] = K[n] end
  end
  local c = redis.call('EXISTS', unpack(args)) -- bounded: 2^#names - 1 (a few names)
  K.has = {}
  for i, n in ipairs(names) do K.has[n] = math.floor(c / 2 ^ (i - 1)) % 2 == 1 end
  return K.has
end

-- Whether key K[name] exists (from K.has when the script looked already, see exist_bits).
local function key_exists(K, name)
  if K.has and K.has[name] ~= nil then return K.has[name] end
  return redis.call('EXISTS', K[name]) == 1
end

local function now_ms()
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

-- state, attempts, max, enqueued, x: all strings (see above); nil when `m` does not parse.
local function parse_meta(m)
  return string.match(m, '^([qcx])|(%d+)|(%d+)|(%d+)|(%d+)$')
end

local function meta_of(s, a, mx, enq, x)
  return s .. '|' .. a .. '|' .. mx .. '|' .. enq .. '|' .. x
end

local function token_of(enq, x)
  return enq .. '.' .. x
end

local function policy(p)
  local keep, keepfor, keepdead, keepdeadfor, idem, idemmax =
    string.match(p, '^(%d+)|(%d+)|(%-?%d+)|(%d+)|(%d+)|(%d+)$')
  if not keep then error('tideq: bad queue policy ' .. tostring(p)) end
  return { keep = tonumber(keep), keepfor = tonumber(keepfor), keepdead = tonumber(keepdead),
    keepdeadfor = tonumber(keepdeadfor), idem = tonumber(idem), idemmax = tonumber(idemmax) }
end

-- Leases `ids` until `deadline` (a string) in the active zset (ANCHOR included, see above).
local function add_active(key, deadline, ids)
  local args = { '+inf', ANCHOR }
  for _, id in ipairs(ids) do
    args[#args + 1] = deadline
    args[#args + 1] = id
  end
  chunked('ZADD', key, args)
end

local function wake(key)
  redis.call('RPUSH', key, '1')
  redis.call('LTRIM', key, -64, -1)
  redis.call('PEXPIRE', key, 60000)
end

-- The event log's most entries, or false when the queue logs no events (read once per call; see
-- "Events").
local function events_max(K)
  if K.evmax == nil then
    K.evmax = K.events and tonumber(redis.call('HGET', K.cfg, 'events')) or false
  end
  return K.evmax
end

-- An event's data over EVENT_DATA_MAX bytes is left out of the log, and an entry holds events
-- until their ids and data reach EVENT_ENTRY_BYTES (at least one event): the log's size is
-- bounded by its most entries times about 17 KiB, whatever the jobs return (see "Events").
local EVENT_DATA_MAX = 1024
local EVENT_ENTRY_BYTES = 16384

-- Logs an event of `kind` for jobs `ids` (`data[i]`: job i's data; nil: none), one stream entry
-- per 500 jobs or EVENT_ENTRY_BYTES (see "Events"). `stored`: the data of these events is kept in
-- the results hash, so a reader can be given data left out of the log.
local function emit(K, kind, ids, data, now, stored)
  local max = events_max(K)
  if not max or #ids == 0 then return end
  now = now or now_ms()
  local i = 1
  while i <= #ids do
    local args, bytes, left = { 't', now, 'e', kind }, 0, {}
    local j = i
    while j <= #ids and j < i + 500 do
      local d = data and data[j] or ''
      local size = #ids[j] + math.min(#d, EVENT_DATA_MAX + 1)
      if j > i and bytes + size > EVENT_ENTRY_BYTES then break end
      bytes = bytes + size
      args[#args + 1] = ids[j]
      if #d > EVENT_DATA_MAX then
        left[#left + 1] = (j - i + 1) .. ':' .. #d .. (stored and 'r' or '')
        d = ''
      end
      args[#args + 1] = d
      j = j + 1
    end
    i = j
    if #left > 0 then
      -- Data left out: a last pair with an empty id lists "<pair>:<size>[r]" (r: in `results`).
      args[#args + 1] = ''
      args[#args + 1] = table.concat(left, ' ')
    end
    local n = redis.call('HINCRBY', K.stats, 'events', 1)
    local r = redis.pcall('XADD', K.events, 'MAXLEN', '~', max, n .. '-1', unpack(args)) -- bounded: 1006
    if type(r) == 'table' and r.err then
      -- The counter fell behind the log (reset by hand): catch up with the log's last entry.
      local info = redis.call('XINFO', 'STREAM', K.events)
      for k = 1, #info, 2 do
        if info[k] == 'last-generated-id' then
          n = tonumber(string.match(info[k + 1], '^(%d+)')) + 1
        end
      end
      redis.call('HSET', K.stats, 'events', n)
      redis.call('XADD', K.events, 'MAXLEN', '~', max, n .. '-1', unpack(args)) -- bounded: 1006
    end
  end
end

-- Whether job `id` is pending (delayed, ready or active: not finished, not gone).
local function job_pending(K, id)
  local m = redis.call('HGET', K.meta, id)
  return m ~= false and string.sub(m, 1, 1) == 'q'
end

-- Frees the dedup keys (without a TTL) that name jobs `ids`, which have finished (see "Dedup and
-- debounce").
-- Whether job `id` was never delivered (no attempt made or ended): a debounce may replace only
-- such a job.
local function never_started(K, id)
  local _, a, _, _, x = parse_meta(redis.call('HGET', K.meta, id) or '')
  return a == '0' and x == '0'
end
-- Frees the dedup keys (those held until their job finishes) of jobs that finished. A dead job
-- (`dead`) keeps the record of its key in dkey, so a requeue takes the key back (take_dedup).
local function release_dedup(K, ids, dead)
  if K.no_dedup or #ids == 0 or redis.call('EXISTS', K.dkey) == 0 then return end
  local keys = hmget(K.dkey, ids)
  local owned = {}
  for i, id in ipairs(ids) do
    local key = keys[i]
    if key then
      if redis.call('GET', K.dd .. key) == id then redis.call('DEL', K.dd .. key) end
      owned[#owned + 1] = id
    end
  end
  if not dead then chunked('HDEL', K.dkey, owned) end
end
-- Requeued dead jobs take their dedup keys back, each while no other pending job holds it (one
-- that does keeps it, and the requeued job then holds none).
local function take_dedup(K, ids)
  if K.no_dedup or #ids == 0 or redis.call('EXISTS', K.dkey) == 0 then return end
  local keys = hmget(K.dkey, ids)
  local lost = {}
  for i, id in ipairs(ids) do
    local key = keys[i]
    if key then
      local cur = redis.call('GET', K.dd .. key)
      if not cur or cur == id or not job_pending(K, cur) then
        redis.call('SET', K.dd .. key, id)
      else
        lost[#lost + 1] = id
      end
    end
  end
  chunked('HDEL', K.dkey, lost)
end

-- Deletes jobs' data (envelope, meta, last error, route, result, progress).
local function forget(K, ids)
  if #ids == 0 then return end
  -- A dead job's record of its dedup key (see release_dedup) goes with it.
  if K.dkey and not K.no_dedup then chunked('HDEL', K.dkey, ids) end
  chunked('HDEL', K.jobs, ids)
  chunked('HDEL', K.meta, ids)
  chunked('HDEL', K.errors, ids)
  if K.route and key_exists(K, 'route') then chunked('HDEL', K.route, ids) end
  if not K.no_results then chunked('HDEL', K.results, ids) end
  if not K.no_progress then chunked('HDEL', K.progress, ids) end
end

-- Tells the waiters of finished jobs (see "Waiters" above): `done` is a list of { id, enqueued,
-- notice kind and data }. Callers first check that the waiters hash exists (one EXISTS), so a
-- queue nobody waits on pays nothing more.
local function notify_waiters(K, done)
  if #done == 0 then return end
  local ids = {}
  for i, d in ipairs(done) do ids[i] = d[1] end
  local hubs = hmget(K.waiters, ids)
  local told = {}
  for i, d in ipairs(done) do
    if hubs[i] then
      local notice = #d[1] .. ':' .. d[1] .. d[2] .. '|' .. d[3]
      for hub in string.gmatch(hubs[i], '(%w+)=%d+') do
        redis.call('RPUSH', K.fin .. hub, notice)
        redis.call('PEXPIRE', K.fin .. hub, 60000)
      end
      told[#told + 1] = d[1]
    end
  end
  if #told > 0 then chunked('HDEL', K.waiters, told) end
end

-- Ends jobs taken out of active (their group slots freed) as cancelled: their cancel was
-- requested. `enqs[i]` is the enqueued stamp of `ids[i]` (for its waiters' notices). Their data,
-- idempotency entries and requests are deleted; counted as cancelled; their waiters are told.
local function end_cancelled(K, ids, enqs)
  if #ids == 0 then return end
  forget(K, ids)
  chunked('ZREM', K.idem, ids)
  chunked('SREM', K.cancel, ids)
  release_dedup(K, ids)
  redis.call('HINCRBY', K.stats, 'cancelled', #ids)
  emit(K, 'cancelled', ids)
  if not K.no_waiters and redis.call('EXISTS', K.waiters) == 1 then
    local done = {}
    for i, id in ipairs(ids) do done[i] = { id, enqs[i] or '0', 'n' } end
    notify_waiters(K, done)
  end
end

-- Whether the cancel of active job `id` was requested (see above).
local function cancel_requested(K, id)
  return redis.call('SISMEMBER', K.cancel, id) == 1
end

---- flow control ----------------------------------------------------------------------------

-- The routes ("priority|sequence|group") of `ids`, or nil when no job of the queue has one.
local function routes(K, ids)
  if #ids == 0 or not key_exists(K, 'route') then return nil end
  return hmget(K.route, ids)
end

-- "priority|sequence|group" -> priority, group ("" for none), sequence.
local function parse_route(r)
  local p, seq, g = string.match(r, '^(%d+)|(%d+)|(.*)$')
  return p, g, seq
end

local TWO32 = 4294967296

-- n fresh sequence numbers: returns the one before the first.
-- How many of `n` jobs (their routes `r`, nil entries for ungrouped ones) each group has:
-- counts by group, and the groups in first-seen order.
local function per_group(r, n)
  local counts, groups = {}, {}
  for i = 1, n do
    local g = r[i] and select(2, parse_route(r[i]))
    if g and g ~= '' then
      if not counts[g] then
        counts[g] = 0
        groups[#groups + 1] = g
      end
      counts[g] = counts[g] + 1
    end
  end
  return counts, groups
end

local function seq_block(K, n)
  return redis.call('HINCRBY', K.stats, 'seq', n) - n
end

-- The queue's settings (cfg hash), read once per call; marks K with the features the queue never
-- used (see "Results and progress").
local function queue_cfg(K)
  local c = redis.call('HMGET', K.cfg, 'paused', 'max_active', 'rate', 'glimit', 'grate',
    'results', 'progress', 'waited', 'dedup', 'events', 'sched', 'recheck', 'ghosts', 'pghosts')
  K.no_results, K.no_progress, K.no_waiters, K.no_dedup = not c[6], not c[7], not c[8], not c[9]
  if K.events then K.evmax = tonumber(c[10]) or false end
  return { paused = c[1] == '1', max_active = tonumber(c[2]), rate = c[3] or nil,
    glimit = tonumber(c[4]), grate = c[5] or nil, gc = {}, act = {}, rs = {}, sched = c[11] == '1',
    recheck = c[12] or nil, ghosts = tonumber(c[13]) or 0, pghosts = tonumber(c[14]) or 0 }
end

-- Of `ids` just popped from one list, those that are not ghosts of cancelled jobs (see
-- "Cancelled ready jobs"); `tag` names the list ("r|", or "p<priority>|"), `field` its cfg count.
local function drop_ghosts(K, ids, tag, field)
  local marks = {}
  for i, id in ipairs(ids) do marks[i] = tag .. id end
  local counts = chunked_read('HMGET', K.ghost, marks)
  -- Ghosts left per mark (one id may be popped twice in one batch: its ghost, then its job).
  local left, used = {}, {}
  for i, m in ipairs(marks) do
    if left[m] == nil then left[m] = tonumber(counts[i]) or 0 end
  end
  local live, n = {}, 0
  for i, id in ipairs(ids) do
    local m = marks[i]
    if left[m] > 0 then
      left[m] = left[m] - 1
      used[m] = (used[m] or 0) + 1
      n = n + 1
    else
      live[#live + 1] = id
    end
  end
  for m, u in pairs(used) do
    if left[m] == 0 then redis.call('HDEL', K.ghost, m)
    else redis.call('HINCRBY', K.ghost, m, -u) end
  end
  if n > 0 then redis.call('HINCRBY', K.cfg, field, -n) end
  return live
end

-- The live ids of `got` (just popped off the ready list, which has ghosts), refilled from the
-- list up to `want` in a few pops of growing size (so a run of ghosts costs calls in proportion
-- to its length over 1000, not one per ghost); ids popped beyond `want` go back to its front.
local function live_ready(K, got, want)
  local out = drop_ghosts(K, got, 'r|', 'ghosts')
  for round = 1, 5 do
    local need = want - #out
    if need <= 0 then break end
    local more = redis.call('LPOP', K.ready, math.min(1000, need * 2 ^ round))
    if not more then break end
    for _, id in ipairs(drop_ghosts(K, more, 'r|', 'ghosts')) do out[#out + 1] = id end
  end
  if #out > want then
    local back = {}
    for i = #out, want + 1, -1 do
      back[#back + 1] = out[i]
      out[i] = nil
    end
    chunked('LPUSH', K.ready, back)
  end
  return out
end

-- Whether any group limit, rate or pause is set (a queue default, or any group's own): without
-- one, every group may always start its next job, and none of it is looked up.
local function groups_limited(K, C)
  if C.limited == nil then
    C.limited = C.glimit ~= nil or C.grate ~= nil or redis.call('EXISTS', K.gcfg) == 1
  end
  return C.limited
end

-- "n|ms" -> n, ms (nil when unset).
local function parse_rate(r)
  if not r then return nil end
  local n, ms = string.match(r, '^(%d+)|(%d+)$')
  return tonumber(n), tonumber(ms)
end

-- When a rate-limited log `key` (n starts per ms) allows the next start: 0 = now.
local function rate_wait(key, n, ms, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - ms)
  if redis.call('ZCARD', key) < n then return 0 end
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return math.max(1, tonumber(oldest[2]) + ms - now + 1)
end

-- Group g's settings in force (its own, else the queue's defaults), read once per call.
local function group_cfg(K, C, g)
  local c = C.gc[g]
  if not c then
    local v = redis.call('HMGET', K.gcfg, 'limit:' .. g, 'rate:' .. g, 'paused:' .. g)
    c = { limit = tonumber(v[1]) or C.glimit, rate = v[2] or C.grate, paused = v[3] ~= false }
    C.gc[g] = c
  end
  return c
end

-- Whether any grouped job is running (its group's count is kept in gstate; none when no job
-- has a route).
local function flow_running(K)
  if K.has and K.has.route == false then return false end
  return redis.call('EXISTS', K.gstate) == 1
end

-- Jobs of group g running now (kept up to date in C.act within one call).
local function group_active(K, C, g)
  local a = C.act[g]
  if not a then
    a = tonumber(redis.call('HGET', K.gstate, g) or '0')
    C.act[g] = a
  end
  return a
end

-- Adds deltas (group -> n) to the groups' running counts (gstate), two calls for all.
local function add_group_active(K, C, deltas, groups)
  if #groups == 0 then return end
  local cur = hmget(K.gstate, groups)
  local set, del = {}, {}
  for i, g in ipairs(groups) do
    local v = (tonumber(cur[i]) or 0) + deltas[g]
    C.act[g] = math.max(v, 0)
    if v > 0 then
      set[#set + 1] = g
      set[#set + 1] = v
    else
      del[#del + 1] = g
    end
  end
  chunked('HSET', K.gstate, set)
  chunked('HDEL', K.gstate, del)
end

-- How many more jobs group g may start now (math.huge: no limit); when none, also the ms until
-- its rate allows one, if the rate is what stops it.
local function group_room(K, C, g, now)
  if not groups_limited(K, C) then return math.huge end
  local c = group_cfg(K, C, g)
  if c.paused then return 0 end
  local room = math.huge
  if c.limit then
    room = c.limit - group_active(K, C, g)
    if room <= 0 then return 0 end
  end
  local n, ms = parse_rate(c.rate)
  if n then
    -- Starts of this call are not in the log yet.
    local used = C.rs[g] or 0
    if used >= n then return 0, ms + 1 end
    local wait = rate_wait(K.gr .. g, n - used, ms, now)
    if wait > 0 then return 0, wait end
    room = math.min(room, n - used - redis.call('ZCARD', K.gr .. g))
  end
  return room
end

-- A group with no room to start a job leaves the rotation until it has some again: held (a job
-- of it ending, a resume or a settings change offers it again), or waiting for its rate window.
local function group_hold(K, g, now, wait)
  redis.call('SREM', K.gset, g)
  redis.call('SADD', K.gheld, g)
  if wait then redis.call('ZADD', K.gwait, now + wait, g) end
end

-- Puts groups at the back of the rotation, those not in it already.
local function rotation_join(K, groups)
  local inside = chunked_read('SMISMEMBER', K.gset, groups)
  local new = {}
  for i, g in ipairs(groups) do
    if inside[i] == 0 then new[#new + 1] = g end
  end
  if #new == 0 then return false end
  chunked('SADD', K.gset, new)
  chunked('RPUSH', K.grot, new)
  return true
end

-- Offers groups that may have ready jobs a place in the rotation (at its back; a group already
-- in it keeps its place). Without group limits this is three calls for all of them. `ready`: the
-- groups are known to have ready jobs. Returns whether any joined.
local function groups_offer(K, C, groups, now, ready)
  local can = {}
  for _, g in ipairs(groups) do
    if ready or redis.call('EXISTS', K.g .. g) == 1 then
      if groups_limited(K, C) then
        local room, wait = group_room(K, C, g, now)
        if room > 0 then
          can[#can + 1] = g
          redis.call('SREM', K.gheld, g)
        else
          redis.call('SADD', K.gheld, g)
          if wait then redis.call('ZADD', K.gwait, now + wait, g) end
        end
      else
        can[#can + 1] = g
      end
    elseif groups_limited(K, C) then
      redis.call('SREM', K.gheld, g)
    end
  end
  return #can > 0 and rotation_join(K, can)
end

-- Jobs of groups ended (completed, failed, released, expired): `groups` lists each group once,
-- `ended[g]` how many of its jobs. Their running counts go down; with group limits, their slots
-- are free again and each group is offered its place back (idle workers woken when one joins).
local function groups_done(K, C, groups, ended, now)
  if #groups == 0 then return end
  local deltas = {}
  for _, g in ipairs(groups) do deltas[g] = -ended[g] end
  add_group_active(K, C, deltas, groups)
  if not groups_limited(K, C) then return end
  -- Only a held group waits for a slot: a group with ready jobs is in the rotation or held,
  -- and one in the rotation keeps its place.
  local held = chunked_read('SMISMEMBER', K.gheld, groups)
  local offer = {}
  for i, g in ipairs(groups) do
    if held[i] == 1 then offer[#offer + 1] = g end
  end
  if #offer > 0 and groups_offer(K, C, offer, now, false) then wake(K.wake) end
end

local function group_done(K, C, g, now)
  groups_done(K, C, { g }, { [g] = 1 }, now)
end

-- Makes jobs ready, each in its queue: the ready list, its priority's list, or its group's zset.
-- A job of a group keeps the place its enqueue gave it (its sequence number), so a retried,
-- recovered or released job runs before the group's jobs enqueued after it. Other jobs queue at
-- the back of their list, or at the front when `front` (a release at shutdown).
local function make_ready(K, C, ids, front, now)
  if #ids == 0 then return end
  local r = routes(K, ids)
  if not r then
    if front then
      for i = #ids, 1, -1 do redis.call('LPUSH', K.ready, ids[i]) end
    else
      chunked('RPUSH', K.ready, ids)
    end
    return
  end
  local plain, prio = {}, {}
  -- Per group (in order of first appearance), its jobs' scores and ids.
  local groups, byg = {}, {}
  local ngrouped = 0
  for i, id in ipairs(ids) do
    local p, g, seq = nil, nil, nil
    if r[i] then p, g, seq = parse_route(r[i]) end
    if not p then
      plain[#plain + 1] = id
    else
      if g == '' then
        prio[#prio + 1] = p
        prio[#prio + 1] = id
      else
        local score = tonumber(p) * TWO32 + tonumber(seq) % TWO32
        local z = byg[g]
        if not z then
          z = {}
          byg[g] = z
          groups[#groups + 1] = g
        end
        z[#z + 1] = score
        z[#z + 1] = id
        ngrouped = ngrouped + 1
      end
    end
  end
  if front then
    for i = #plain, 1, -1 do redis.call('LPUSH', K.ready, plain[i]) end
  else
    chunked('RPUSH', K.ready, plain)
  end
  if #prio > 0 then
    -- Each priority's jobs wait in a list of their own (FIFO, one call per batch and priority);
    -- the prio zset holds the priorities that have some.
    local levels, byp = {}, {}
    for i = 1, #prio, 2 do
      local lvl = prio[i]
      if not byp[lvl] then
        byp[lvl] = {}
        levels[#levels + 1] = lvl
        levels[#levels + 1] = lvl
      end
      local l = byp[lvl]
      l[#l + 1] = prio[i + 1]
    end
    for i = 1, #levels, 2 do
      local l = byp[levels[i]]
      if front then
        for j = #l, 1, -1 do redis.call('LPUSH', K.p .. levels[i], l[j]) end
      else
        chunked('RPUSH', K.p .. levels[i], l)
      end
    end
    chunked('ZADD', K.prio, levels)
    redis.call('HINCRBY', K.stats, 'pready', #prio / 2)
  end
  if ngrouped > 0 then
    for _, g in ipairs(groups) do chunked('ZADD', K.g .. g, byg[g]) end
    redis.call('HINCRBY', K.stats, 'gready', ngrouped)
    groups_offer(K, C, groups, now, true)
  end
end

-- Marks explicit ids as finished at `now` in the idem zset (only those it holds), and drops the
-- ones older than the window and the oldest beyond P.idemmax.
local function idem_finished(K, now, P, ids)
  if P.idem == 0 or #ids == 0 or not key_exists(K, 'idem') then return end
  local args = {}
  for _, id in ipairs(ids) do
    args[#args + 1] = now
    args[#args + 1] = id
  end
  for i = 1, #args, 1000 do
    redis.call('ZADD', K.idem, 'XX', unpack(args, i, math.min(i + 999, #args)))
  end
  redis.call('ZREMRANGEBYSCORE', K.idem, '-inf', '(' .. (now - P.idem))
  local over = redis.call('ZCARD', K.idem) - P.idemmax
  if over > 0 then redis.call('ZREMRANGEBYRANK', K.idem, 0, over - 1) end
end

-- Keeps the dead set within the policy's count and age: the oldest beyond are deleted with their
-- data, at most 1000 per call, and counted as dead_trimmed.
local function trim_dead(K, now, P)
  local old = {}
  if P.keepdead >= 0 then
    local over = redis.call('ZCARD', K.dead) - P.keepdead
    if over > 0 then old = redis.call('ZRANGE', K.dead, 0, math.min(over, 1000) - 1) end
  end
  if P.keepdeadfor > 0 and #old < 1000 then
    local aged = redis.call('ZRANGEBYSCORE', K.dead, '-inf', '(' .. (now - P.keepdeadfor),
      'LIMIT', #old, 1000 - #old)
    for _, id in ipairs(aged) do old[#old + 1] = id end
  end
  if #old == 0 then return end
  chunked('ZREM', K.dead, old)
  forget(K, old)
  redis.call('HINCRBY', K.stats, 'dead_trimmed', #old)
end

-- The error texts of `dead` (see `bury`).
local function e_of(dead)
  local out = {}
  for i, d in ipairs(dead) do out[i] = d[3] end
  return out
end

-- Dead-letters jobs: `dead` is a list of { id, meta, error text }; counted as failed.
local function bury(K, now, P, dead)
  if #dead == 0 then return end
  local z, m, e, ids = {}, {}, {}, {}
  for _, d in ipairs(dead) do
    z[#z + 1] = now
    z[#z + 1] = d[1]
    m[#m + 1] = d[1]
    m[#m + 1] = d[2]
    e[#e + 1] = d[1]
    e[#e + 1] = d[3]
    ids[#ids + 1] = d[1]
  end
  chunked('ZADD', K.dead, z)
  chunked('HSET', K.meta, m)
  chunked('HSET', K.errors, e)
  redis.call('HINCRBY', K.stats, 'failed', #dead)
  idem_finished(K, now, P, ids)
  release_dedup(K, ids, true)
  emit(K, 'dead', ids, e_of(dead), now)
  if not K.no_waiters and redis.call('EXISTS', K.waiters) == 1 then
    local done = {}
    for i, d in ipairs(dead) do
      local _, _, _, enq = parse_meta(d[2])
      done[i] = { d[1], enq or '0', 'x' .. d[3] }
    end
    notify_waiters(K, done)
  end
  trim_dead(K, now, P)
end

-- The dead record of a job whose meta `m` does not parse: its text goes into the error.
local function unreadable(id, m)
  return { id, 'x|0|1|0|0', 'unreadable job record (meta ' .. string.format('%q', m) ..
    '); dead-lettered so the rest of its batch could go on' }
end

-- Deletes the completed jobs older than P.keepfor ms (up to 100 a call), oldest first.
local function trim_done_aged(K, now, P)
  if P.keep == 0 or P.keepfor == 0 then return end
  local old = {}
  for _ = 1, 100 do
    local head = redis.call('LINDEX', K.done, 0)
    if not head then break end
    local hm = redis.call('HGET', K.meta, head)
    local finished = hm and tonumber(string.match(hm, '^c|%d+|%d+|%d+|(%d+)$'))
    if finished and finished > now - P.keepfor then break end
    redis.call('LPOP', K.done)
    old[#old + 1] = head
  end
  forget(K, old)
end

-- Completes the acks found in ARGV[first], ARGV[first + 1], ...: pairs of job id and lease token,
-- or, for a token ending in "+", triples with the handler's result after the token. Only the
-- holder of a job's current delivery may. Finished jobs are kept (state c, listed in the done list
-- oldest first, their results in the results hash) up to the newest P.keep and those younger than
-- P.keepfor ms, else deleted at once. The count is kept by trimming ahead: once over P.keep, the
-- oldest go down to P.keep less 5% (so trimming costs calls once per twentieth of P.keep acks,
-- not on every call). The age is looked at only when `aged` (a busy worker asks a few times a second,
-- and on the call that leases nothing after its acks, see fetch_jobs.lua). Returns an array with, per ack: 1 completed; 2 already completed (by this
-- delivery: an ack sent again after its reply was lost); -1 lease lost (changes nothing).
local function complete_leases(K, C, now, P, first, aged)
  local nows = tostring(now)
  local ids, toks, res = {}, {}, {}
  local i, nargv = first, #ARGV
  while i < nargv do
    local n, tok = #ids + 1, ARGV[i + 1]
    ids[n] = ARGV[i]
    i = i + 2
    if string.byte(tok, -1) == 43 then -- '+': a result follows
      tok = string.sub(tok, 1, -2)
      res[n] = ARGV[i]
      i = i + 1
    end
    toks[n] = tok
  end
  local out = {}
  if #ids == 0 then return out end
  local metas = hmget(K.meta, ids)
  local okids, okres, seen, newmeta, results, done = {}, {}, {}, {}, {}, {}
  local waited = not K.no_waiters and redis.call('EXISTS', K.waiters) == 1
  for j, id in ipairs(ids) do
    local m = metas[j]
    out[j] = -1
    if m and not seen[id] then
      local s, a, mx, enq, x = parse_meta(m)
      if s == 'q' and token_of(enq, x) == toks[j] then
        out[j] = 1
        seen[id] = true
        okids[#okids + 1] = id
        okres[#okids] = res[j]
        if waited then done[#done + 1] = { id, enq, res[j] and 'r' .. res[j] or 'c' } end
        if P.keep > 0 then
          newmeta[#newmeta + 1] = id
          newmeta[#newmeta + 1] = meta_of('c', a, mx, enq, nows)
          if res[j] then
            results[#results + 1] = id
            results[#results + 1] = res[j]
          end
        end
      elseif s == 'c' and string.match(toks[j], '^(%d+)%.') == enq then
        out[j] = 2
      end
    end
  end
  if #okids == 0 then return out end
  -- A current token means the job is in the active zset: every script keeps the two in step.
  chunked('ZREM', K.active, okids)
  redis.call('HINCRBY', K.stats, 'completed', #okids)
  -- A slot under the queue's concurrency cap is free again: an idle worker may start a job.
  if C.max_active then wake(K.wake) end
  -- Grouped jobs free their groups' slots (only looked up when a group has jobs running).
  if flow_running(K) then
    local r = routes(K, okids)
    if r then
      local ended, groups = per_group(r, #okids)
      groups_done(K, C, groups, ended, now)
    end
  end
  idem_finished(K, now, P, okids)
  release_dedup(K, okids)
  if events_max(K) then
    local data = {}
    for j, id in ipairs(okids) do data[j] = okres[j] or '' end
    emit(K, 'completed', okids, data, now, P.keep > 0)
  end
  if waited then notify_waiters(K, done) end
  if P.keep == 0 then
    forget(K, okids)
    return out
  end
  chunked('HSET', K.meta, newmeta)
  if #results > 0 then
    chunked('HSET', K.results, results)
    if K.no_results then
      redis.call('HSET', K.cfg, 'results', '1')
      K.no_results = nil
    end
  end
  local len = 0
  for i = 1, #okids, 1000 do
    len = redis.call('RPUSH', K.done, unpack(okids, i, math.min(i + 999, #okids)))
  end
  local over = len - P.keep
  if over > 0 then forget(K, redis.call('LPOP', K.done, over + math.floor(P.keep / 20))) end
  if aged then trim_done_aged(K, now, P) end
  return out
end

-- The dead jobs a requeue or purge applies to: `id` when it is dead, or ("" for all) the oldest
-- `limit`.
local function dead_ids(key, id, limit)
  if id ~= '' then
    if redis.call('ZSCORE', key, id) then return { id } end
    return {}
  end
  return redis.call('ZRANGE', key, 0, limit - 1)
end
