-- lib/dedup.lua: Dedup and debounce keys (docs/data-model.md, "Dedup and debounce").
--#include lib/chunked.lua
--#include lib/meta.lua

-- Whether job `id` is pending (delayed, ready or active: not finished, not gone).
local function job_pending(K, id)
  local m = redis.call('HGET', K.meta, id)
  return m ~= false and string.sub(m, 1, 1) == 'q'
end

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
