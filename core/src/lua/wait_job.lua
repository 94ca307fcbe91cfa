--[[ A waiter's view of one job, and its registration (docs/data-model.md, "Waiters"): with ARGV[2] "1"
  the caller's hub counts one more wait for the job, but only while the job is unfinished (so a
  job that finishes later tells the hub through its inbox `fin:<hub id>`); "-1" takes one wait of
  the hub off (a wait that gave up); "0" only looks.
  KEYS[1] meta hash   KEYS[2] results hash   KEYS[3] errors hash   KEYS[4] waiters hash
  KEYS[5] fin (prefix of the hubs' inboxes; unused here)   KEYS[6] cfg hash (its `waited` field
  says the queue has had waiters, see docs/data-model.md)
  ARGV[1] job id   ARGV[2] "1" register, "-1" unregister, "0" look   ARGV[3] the hub's id
  Returns: { state, enqueued ms, result, last error }: state "q" unfinished, "c" completed, "x"
  dead, or nil when there is no such job (the others nil when absent). ]]
--#include lib/meta.lua
local id, op, hub = ARGV[1], ARGV[2], ARGV[3]

-- The job's waits by hub, changed by `delta` for this hub; the field goes with the last wait.
local function count(delta)
  local cur = redis.call('HGET', KEYS[4], id)
  if not cur and delta < 0 then return end
  local out, mine = {}, 0
  for h, n in string.gmatch(cur or '', '(%w+)=(%d+)') do
    if h == hub then mine = tonumber(n) else out[#out + 1] = h .. '=' .. n end
  end
  mine = mine + delta
  if mine > 0 then out[#out + 1] = hub .. '=' .. mine end
  if #out == 0 then
    redis.call('HDEL', KEYS[4], id)
  else
    redis.call('HSET', KEYS[4], id, table.concat(out, ' '))
  end
end

-- No field on "-1": the job finished and its hubs were told.
if op == '-1' then count(-1) end
local m = redis.call('HGET', KEYS[1], id)
if not m then return { false, false, false, false } end
local s, _, _, enq = parse_meta(m)
if not s then
  -- An unreadable record: reported as unfinished with its text, so the caller can say so.
  return { 'q', '0', false, 'unreadable job record (meta ' .. string.format('%q', m) .. ')' }
end
if s == 'q' then
  if op == '1' then
    count(1)
    redis.call('HSET', KEYS[6], 'waited', '1')
  end
  return { s, enq, false, false }
end
local result = false
if s == 'c' then result = redis.call('HGET', KEYS[2], id) end
return { s, enq, result, redis.call('HGET', KEYS[3], id) }
