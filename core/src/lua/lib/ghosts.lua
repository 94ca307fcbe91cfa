-- lib/ghosts.lua: Entries left in the ready lists by cancelled jobs (docs/data-model.md, "Cancelled ready jobs").
--#include lib/chunked.lua

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
