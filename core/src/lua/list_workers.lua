#!lua flags=no-writes
--[[ The workers seen since a time, with their entries (docs/data-model.md, "Workers"), most
  recently seen first.
  KEYS[1] workers zset   KEYS[2] winfo hash
  ARGV[1] seen after (ms)   ARGV[2] most workers (1-1000)
  Returns: flat array of worker id, last seen (ms), entry ("" when it has none) per worker. ]]
--#K
local seen = redis.call('ZREVRANGEBYSCORE', K.workers, '+inf', '(' .. ARGV[1], 'WITHSCORES', 'LIMIT',
  0, tonumber(ARGV[2]))
local out = {}
for i = 1, #seen, 2 do
  out[#out + 1] = seen[i]
  out[#out + 1] = tonumber(seen[i + 1])
  out[#out + 1] = redis.call('HGET', K.winfo, seen[i]) or ''
end
return out
