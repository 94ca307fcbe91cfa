#!lua flags=no-writes
--[[ Read a queue's event log after a reader's place (see "Events" in lib_jobs.lua). Writes
  nothing.
  KEYS[1] events stream   KEYS[2] stats hash (its `events` field numbers the entries)
  ARGV[1] the reader's place: "$" (from now on), "0" (from the oldest entry kept) or the id of the
  last entry it read   ARGV[2] most entries returned
  Returns: { the place read from (an entry id), how many entries were trimmed between that place
  and the oldest entry kept (the reader missed them; 0 none), the entries after it (XRANGE) }. ]]
local cur = ARGV[1]
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
if cur == '$' or (cur == '0' and not first) then
  return { (redis.call('HGET', KEYS[2], 'events') or '0') .. '-1', 0, {} }
end
if cur == '0' then
  cur = (tonumber(string.match(first[1], '^(%d+)')) - 1) .. '-1'
end
local lost = 0
if first then
  local fn = tonumber(string.match(first[1], '^(%d+)'))
  local cn = tonumber(string.match(cur, '^(%d+)'))
  if fn > cn + 1 then lost = fn - cn - 1 end
end
return { cur, lost, redis.call('XRANGE', KEYS[1], '(' .. cur, '+', 'COUNT', tonumber(ARGV[2])) }
