#!lua flags=no-writes
--[[ Read a queue's event log after a reader's place (see "Events" in docs/data-model.md). Writes
  nothing.
  KEYS[1] events stream   KEYS[2] stats hash (its `events` field numbers the entries)
  KEYS[3] results hash
  ARGV[1] the reader's place: "$" (from now on), "0" (from the oldest entry kept) or the id of the
  last entry it read   ARGV[2] most entries returned
  Returns: { the place read from (an entry id), how many entries were trimmed between that place
  and the oldest entry kept (the reader missed them; 0 none), the entries after it (XRANGE; a
  result left out of an entry and still kept is put back, up to about 1 MiB of them per read) }. ]]
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
local entries = redis.call('XRANGE', KEYS[1], '(' .. cur, '+', 'COUNT', tonumber(ARGV[2]))
local bytes = 0
for e = 1, #entries do
  if bytes > 1048576 then
    -- The rest come with the next read.
    for k = #entries, e, -1 do entries[k] = nil end
    break
  end
  local f = entries[e][2]
  if #f >= 6 and f[#f - 1] == '' then
    local keep = {}
    for spec in string.gmatch(f[#f], '%S+') do
      local pair, size = string.match(spec, '^(%d+):(%d+)r$')
      local r = pair and redis.call('HGET', KEYS[3], f[3 + 2 * tonumber(pair)])
      if r then
        f[4 + 2 * tonumber(pair)] = r
        bytes = bytes + #r
      else
        keep[#keep + 1] = pair and (pair .. ':' .. size) or spec
      end
    end
    if #keep > 0 then
      f[#f] = table.concat(keep, ' ')
    else
      f[#f] = nil
      f[#f] = nil
    end
  end
end
return { cur, lost, entries }
