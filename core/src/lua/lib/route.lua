-- lib/route.lua: A job's route "priority|sequence|group" (docs/data-model.md, "Queue control"); the enqueue
-- argument "priority|group" is written by `scripts::encoding::route` (Rust).
--#include lib/base.lua
--#include lib/chunked.lua

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

-- The route enqueue_jobs.lua is given, "priority|group" (Rust: `scripts::encoding::route_arg`)
-- -> priority, group ("" for none).
local function parse_route_arg(r)
  return string.match(r, '^(%d+)|(.*)$')
end

-- The route stored for a job of priority `p` and group `g` ("" for none) given sequence number
-- `seq` (its place in line).
local function route_of(p, seq, g)
  return p .. '|' .. seq .. '|' .. g
end

local TWO32 = 4294967296

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

-- The deadline (ms) of a job due at `due` whose expiry argument (an enqueue's: "a<ms>" at, or
-- "r<ms>" after its due time) is `e`, or nil.
local function expiry_deadline(e, due)
  if e == '' then return nil end
  local kind, ms = string.match(e, '^(%a)(%d+)$')
  if kind == 'r' then return due + tonumber(ms) end
  return tonumber(ms)
end
