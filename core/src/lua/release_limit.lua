--[[ Give back a concurrency limiter's slot (docs/data-model.md, "Limiters"). A holder whose
  lease ran out was dropped already: nothing changes.
  KEYS[1] hold zset
  ARGV[1] holder token
  Returns: 1 given back, 0 not held (its lease had run out). ]]
--#K
return redis.call('ZREM', K.hold, ARGV[1])
