-- lib/latency.lua: When pending jobs became ready, and the queue's latency (docs/data-model.md, "Latency").
--#include lib/chunked.lua

-- Records when `ids` became ready (since[i], or `since` for all when it is not a list, else `now`;
-- ms) in the rat hash. A job ready from its enqueue has no entry, so a script without the key (an
-- enqueue) writes nothing; the entry goes when the job is leased (fetch_jobs.lua) or cancelled.
local function mark_ready_since(K, ids, since, now)
  if not K.rat or #ids == 0 then return end
  local args = {}
  -- One time for all of them, or one each.
  local one = type(since) ~= 'table' and (since or now)
  for i, id in ipairs(ids) do
    args[2 * i - 1] = id
    args[2 * i] = one or since[i]
  end
  chunked('HSET', K.rat, args)
  -- A script that looked whether the key exists (exist_bits) knows it does now.
  if K.has then K.has.rat = true end
end

-- When each of `ids` became ready (ms; false for an entry that is not a pending job, such as the
-- entry a cancelled job left in a list): the later of its enqueue and its rat entry (an entry
-- older than the enqueue was left by an earlier job of the same id). A script that knows the rat
-- hash does not exist sets K.rat to nil: one call less.
local function ready_since(K, ids)
  local metas, rats = hmget(K.meta, ids), K.rat and hmget(K.rat, ids) or {}
  local out = {}
  for i = 1, #ids do
    local enq = metas[i] and tonumber(string.match(metas[i], '^q|%d+|%d+|(%d+)|%d+$'))
    if enq and rats[i] then enq = math.max(enq, tonumber(rats[i]) or 0) end
    out[i] = enq or false
  end
  return out
end

-- How many of a group's next jobs (in its order of turn) a group's latency looks at.
local GROUP_LOOK = 10

-- How long each of `groups` has had a job ready (ms at `now`; 0 when none): the longest of its
-- next GROUP_LOOK jobs. A few calls per group.
local function group_latencies(K, groups, now)
  local ids, owner = {}, {}
  for gi, g in ipairs(groups) do
    for _, id in ipairs(redis.call('ZRANGE', K.g .. g, 0, GROUP_LOOK - 1)) do
      ids[#ids + 1] = id
      owner[#ids] = gi
    end
  end
  local out = {}
  for gi = 1, #groups do out[gi] = 0 end
  if #ids == 0 then return out end
  for i, t in ipairs(ready_since(K, ids)) do
    if t then out[owner[i]] = math.max(out[owner[i]], now - t) end
  end
  return out
end
