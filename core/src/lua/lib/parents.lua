-- lib/parents.lua: Flows: a finished child tells its parent (docs/data-model.md, "Flows").
--#include lib/base.lua
--#include lib/chunked.lua

-- How long a flow job may stay held before a worker settles it (ms; Rust: HOLD_GRACE_MS).
local HOLD_GRACE_MS = 30000

-- Jobs that finished for good (completed, dead-lettered, expired, cancelled, lost) and belong to
-- a flow leave a notice for their parent in the outbox (`fout`), which a worker relays to the
-- parent's queue (flow_notify.lua there; the parent may live in another hash slot), and wakes
-- the workers so one does it soon. `outs[i]` is how `ids[i]` ended: "c" completed (then its
-- result), "x" dead-lettered (then its error), "e" expired (then its error), "n" cancelled, "l"
-- lost. A queue that never took part in a flow (cfg "flows" unset) pays nothing.
local function tell_parents(K, ids, outs)
  if #ids == 0 or K.no_flows or not K.fparent or not key_exists(K, 'fparent') then return end
  local refs = chunked_read('HMGET', K.fparent, ids)
  local notes = {}
  for i, id in ipairs(ids) do
    local ref = refs[i]
    if ref then
      if string.find(ref, '\n', 1, true) then
        -- A graph's job that several run after: one head per line, a notice each.
        for head in string.gmatch(ref, '[^\n]+') do
          notes[#notes + 1] = head .. '\t' .. id .. '\t' .. outs[i]
        end
      else
        notes[#notes + 1] = ref .. '\t' .. id .. '\t' .. outs[i]
      end
    end
  end
  if #notes == 0 then return end
  -- The child keeps its parent's record (get shows it) until its data goes; a second notice
  -- (a dead child requeued, then completed) is recorded once by the parent.
  chunked('RPUSH', K.fout, notes)
  wake(K.wake)
end

-- The same outcome for every one of `ids`.
local function tell_parents_all(K, ids, out)
  if #ids == 0 or K.no_flows then return end
  local outs = {}
  for i = 1, #ids do outs[i] = out end
  tell_parents(K, ids, outs)
end

-- A flow job's own flow records go with its data (see forget): the results its children sent
-- (`fk:<id>`), its children's list (`fl:<id>`), its place in the flow.
local function forget_flow(K, ids)
  if #ids == 0 or K.no_flows or not K.fk then return end
  local keys = {}
  for _, id in ipairs(ids) do
    keys[#keys + 1] = K.fk .. id
    keys[#keys + 1] = K.fl .. id
  end
  -- UNLINK: a parent of many children frees its records off the main thread.
  for i = 1, #keys, 1000 do redis.call('UNLINK', unpack(keys, i, math.min(i + 999, #keys))) end
  chunked('HDEL', K.fwait, ids)
  chunked('HDEL', K.fparent, ids)
end
