#!lua flags=no-writes
--[[ A page of the workers seen within a time before Redis's now (docs/data-model.md, "Workers"),
  with their entries, in the order they were last seen, after a place: a reader's own clock never
  decides who is alive. Each call reads at most ARGV[3] workers (O(log n + that)); a worker seen
  again while the pages are read moves after the place and may be read twice (the caller keeps
  its latest sighting), never missed.
  KEYS[1] workers zset   KEYS[2] winfo hash
  ARGV[1] seen within (ms, before Redis's now)
  ARGV[2] the place ("" the start: the oldest sighting within ARGV[1]; else "<seen>|<id>" of the
    last worker read)
  ARGV[3] most workers (1-1000)
  Returns: { the place after them or false when there are no more, then per worker its id, last
  seen (ms) and entry ("" when it has none) }. ]]
--#K
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local since = now - tonumber(ARGV[1])
local most = tonumber(ARGV[3])
local start = nil
if ARGV[2] == '' then
  start = redis.call('ZCOUNT', K.workers, '-inf', since)
else
  local seen, id = string.match(ARGV[2], '^([^|]*)|(.*)$')
  if not seen then return redis.error_reply('tideq: bad place') end
  if redis.call('ZSCORE', K.workers, id) == seen then
    start = redis.call('ZRANK', K.workers, id) + 1
  else
    -- That worker was seen again (or forgotten): go on from its old sighting's score, ties
    -- included (a worker read twice is kept once).
    start = redis.call('ZCOUNT', K.workers, '-inf', '(' .. seen)
  end
  -- Never before the window.
  start = math.max(start, redis.call('ZCOUNT', K.workers, '-inf', since))
end
local got = redis.call('ZRANGE', K.workers, start, start + most - 1, 'WITHSCORES')
local out = { false }
for i = 1, #got, 2 do
  out[#out + 1] = got[i]
  out[#out + 1] = tonumber(got[i + 1])
  out[#out + 1] = redis.call('HGET', K.winfo, got[i]) or ''
end
if #got == 2 * most then out[1] = got[#got] .. '|' .. got[#got - 1] end
return out
