--[[ The flow outbox relayer's lock (docs/data-model.md, "Flows"): the relayer that holds it
  (its token) trims the notices it delivered and keeps the lock for another page; one that lost
  it (it stalled past the lock's time and another relayer took over) trims nothing, so a page is
  never trimmed twice and no notice is dropped undelivered. ARGV[2] "0" releases the lock.
  KEYS[1] frelay (the lock)   KEYS[2] fout list
  ARGV[1] the relayer's token   ARGV[2] how many notices it delivered from the head ("0": none,
  release the lock)   ARGV[3] the lock's time (ms)
  Returns: 1 if the lock was held (and the notices trimmed), 0 if not. ]]
--#K
if redis.call('GET', K.frelay) ~= ARGV[1] then return 0 end
local n = tonumber(ARGV[2])
if n == 0 then
  redis.call('DEL', K.frelay)
  return 1
end
redis.call('LTRIM', K.fout, n, -1)
redis.call('PEXPIRE', K.frelay, tonumber(ARGV[3]))
return 1
