-- lib/acks.lua: Completing acks (`complete_leases`).
--#include lib/base.lua
--#include lib/chunked.lua
--#include lib/dedup.lua
--#include lib/events.lua
--#include lib/control.lua
--#include lib/forget.lua
--#include lib/meta.lua
--#include lib/retention.lua
--#include lib/route.lua
--#include lib/waiters.lua
--#include lib/parents.lua
--#include lib/attempts.lua

-- Completes the acks found in ARGV[first], ARGV[first + 1], ...: pairs of job id and lease token,
-- or, for a token ending in "+", triples with the handler's result after the token. A token may
-- carry its attempt's run before the "+": "<token>;<start ms>~<worker id>": kept in a retained
-- job's meta, and in its attempts when it failed before (see "Attempts and logs"). Only the
-- holder of a job's current delivery may. Finished jobs are kept (state c, listed in the done list
-- oldest first, their results in the results hash) up to the newest P.keep and those younger than
-- P.keepfor ms, else deleted at once. The count is kept by trimming ahead: once over P.keep, the
-- oldest go down to P.keep less 5% (so trimming costs calls once per twentieth of P.keep acks,
-- not on every call). The age is looked at only when `aged` (a busy worker asks a few times a second,
-- and on the call that leases nothing after its acks, see fetch_jobs.lua). Returns an array with, per ack: 1 completed; 2 already completed (by this
-- delivery: an ack sent again after its reply was lost); -1 lease lost (changes nothing).
-- The completed jobs leave the active zset, last: a current token means the job is in it (every
-- script keeps the two in step), and should a write above fail (a key of the queue holding
-- another kind of value than tideq keeps there), the job stays active and its lease brings it
-- back, rather than being left in no state at all.
local function leave_active(K, okids)
  chunked('ZREM', K.active, okids)
end

local function complete_leases(K, C, now, P, first, aged)
  local nows = tostring(now)
  local ids, toks, res, runs = {}, {}, {}, {}
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
    local semi = string.find(tok, ';', 1, true)
    if semi then
      runs[n] = string.sub(tok, semi + 1)
      tok = string.sub(tok, 1, semi - 1)
    end
    toks[n] = tok
  end
  local out = {}
  if #ids == 0 then return out end
  local metas = hmget(K.meta, ids)
  local okids, okres, seen, newmeta, results, done, recs = {}, {}, {}, {}, {}, {}, {}
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
          local started, worker, recorded, started_text = run_of(runs[j])
          local cm = meta_of('c', a, mx, enq, nows)
          if started then cm = cm .. '|' .. started_text .. '|' .. (worker or '') end
          newmeta[#newmeta + 1] = cm
          -- An attempt after others (failed, lost), or one a renewal recorded as under way: its
          -- record joins theirs.
          if a ~= '0' or recorded then
            recs[#recs + 1] = { id, { n = tonumber(a) + 1, s = started, e = now, w = worker,
              o = 'completed' } }
          end
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
  redis.call('HINCRBY', K.stats, 'completed', #okids)
  -- A slot under the queue's concurrency cap is free again: an idle worker may start a job.
  if C.max_active then wake(K.wake) end
  -- Grouped jobs free their groups' slots (only looked up when a group has jobs running).
  if groups_running(K) then
    local r = routes(K, okids)
    if r then
      local ended, groups = per_group(r, #okids)
      groups_done(K, C, groups, ended, now)
    end
  end
  idem_finished(K, now, P, okids)
  release_dedup(K, okids)
  if P.keep > 0 then drop_expiry(K, okids) end
  if events_max(K) then
    local data = {}
    for j, id in ipairs(okids) do data[j] = okres[j] or '' end
    emit(K, 'completed', okids, data, now, P.keep > 0)
  end
  if waited then notify_waiters(K, done) end
  if not K.no_flows then
    local outs = {}
    for j = 1, #okids do outs[j] = 'c' .. (okres[j] or '') end
    tell_parents(K, okids, outs)
  end
  if P.keep == 0 then
    forget(K, okids)
    leave_active(K, okids)
    return out
  end
  chunked('HSET', K.meta, newmeta)
  add_attempts(K, recs)
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
  leave_active(K, okids)
  return out
end
