--[[ Children tell their parent how they finished (relayed from their queue's outbox, see
  lib/parents.lua; docs/data-model.md, "Flows"). Each notice is recorded once in the parent's
  `fk:<parent>` hash (child -> outcome), so a notice relayed twice counts once. A parent still
  waiting counts its child done; when none is pending it is placed (ready), unless it is held.
  A failed child (dead-lettered, expired, cancelled, lost) of the "fail" policy dead-letters the
  parent at once (which tells its own parent in turn); of the "ignore" policy it counts as done,
  recorded as ignored; of the "continue" policy as done, recorded as failed. A notice for a
  parent no longer waiting (finished) changes nothing, and one for a parent gone (cancelled,
  trimmed) records nothing. Each parent's count is read once per call and written back once.
  KEYS[1] meta hash   KEYS[2] fwait hash   KEYS[3] fhold zset   KEYS[4] froot hash
  KEYS[5] fk (prefix of the children's results)   KEYS[6] fparent hash   KEYS[7] fout list
  KEYS[8] dead zset   KEYS[9] errors hash   KEYS[10] stats hash   KEYS[11] idem zset
  KEYS[12] dd (dedup key prefix)   KEYS[13] dkey hash   KEYS[14] events stream
  KEYS[15] waiters hash   KEYS[16] fin (prefix of the waiters' notice lists)
  KEYS[17] expires zset   KEYS[18] jobs hash   KEYS[19] results hash   KEYS[20] progress hash
  KEYS[21] ready list   KEYS[22] wake list   KEYS[23] route hash   KEYS[24] prio zset
  KEYS[25] grot list   KEYS[26] gheld set   KEYS[27] gstate hash   KEYS[28] gcfg hash
  KEYS[29] gwait zset   KEYS[30] cfg hash   KEYS[31] g (group key prefix)
  KEYS[32] gr (group rate-log prefix)   KEYS[33] gset set   KEYS[34] p (priority list key prefix)
  KEYS[35] fl (prefix of the children's lists)
  KEYS[36] rat hash (when jobs made ready after their enqueue became ready)
  KEYS[37] attempts hash   KEYS[38] logs hash   KEYS[39] lg (prefix of job log lists)
  KEYS[40] cost hash (id -> cost, for jobs whose cost is not 1)
  ARGV[1] the parents' queue policy (docs/data-model.md), then per notice 4 values: parent id,
  the child's policy ("f" fail the parent, "i" ignore, "c" continue), the child ("<queue>\t<id>"),
  how it ended ("c<result>", "x<error>", "e<error>", "n", "l")
  Returns: { notices recorded, 1 if this queue's outbox has notices to relay (else 0) }. ]]
--#include lib/base.lua
--#include lib/meta.lua
--#include lib/policy.lua
--#include lib/cfg.lua
--#include lib/control.lua
--#include lib/bury.lua
--#K
local now = now_ms()
local P = policy(ARGV[1])
local C = queue_cfg(K)
local recorded, ready, dead = 0, {}, {}
-- Why a child's end fails its parent.
local function why(child, out)
  local q, id = string.match(child, '^([^\t]*)\t(.*)$')
  local who = 'child job ' .. (id or child) .. ' of queue ' .. (q or '?')
  local kind, data = string.sub(out, 1, 1), string.sub(out, 2)
  if kind == 'x' then return who .. ' failed: ' .. data end
  if kind == 'e' then return who .. ' ' .. data end
  if kind == 'n' then return who .. ' was cancelled' end
  return who .. ' was lost (its data went missing)'
end
-- Per parent, what this call knows of it: `wait` its pending count while it waits (written back
-- once, at the end), false once it does not; `exists` whether its data is there.
local parents = {}
local function parent(pid)
  local p = parents[pid]
  if not p then
    local w = redis.call('HGET', K.fwait, pid)
    p = { wait = w and tonumber(w) or false }
    p.exists = p.wait and true or redis.call('HEXISTS', K.meta, pid) == 1
    parents[pid] = p
  end
  return p
end
for i = 2, #ARGV - 3, 4 do
  local pid, pol, child, out = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local failed = string.find(out, '^[xenl]') ~= nil
  local val = (failed and pol == 'i') and ('i' .. out) or out
  local p = parent(pid)
  -- A parent gone keeps no records.
  if p.exists and redis.call('HSETNX', K.fk .. pid, child, val) == 1 then
    recorded = recorded + 1
    if not p.wait then
      -- No longer waiting: recorded, nothing more.
    elseif failed and pol == 'f' then
      p.wait, p.dirty = false, false
      redis.call('HDEL', K.fwait, pid)
      redis.call('ZREM', K.fhold, pid)
      redis.call('HDEL', K.froot, pid)
      local s, a, mx, enq, x = parse_meta(redis.call('HGET', K.meta, pid) or '')
      if s then dead[#dead + 1] = { pid, meta_of('x', a, mx, enq, x), why(child, out) } end
    else
      p.wait, p.dirty = p.wait - 1, true
      if p.wait <= 0 then
        p.wait, p.dirty = false, false
        redis.call('HDEL', K.fwait, pid)
        if not redis.call('ZSCORE', K.fhold, pid) then ready[#ready + 1] = pid end
      end
    end
  end
end
for pid, p in pairs(parents) do
  if p.dirty then redis.call('HSET', K.fwait, pid, p.wait) end
end
bury(K, now, P, dead)
if #ready > 0 then
  make_ready(K, C, ready, false, now)
  wake(K.wake)
end
return { recorded, redis.call('EXISTS', K.fout) }
