--[[ Keep the items a pop could not open (sealed with a key the consumer lacks or that does not
  match) in the shard's bounded unreadable list, newest first, at most ARGV[1] entries (the
  oldest dropped), and count them: stats `unreadable` up, `delivered` down (the pop had counted
  them delivered).
  KEYS[1] unreadable list   KEYS[2] stats hash
  ARGV[1] most entries kept (>= 1)   ARGV[2 ..] entries (an item, its group, key id and error)
  Returns: the list's length. ]]
local n = #ARGV - 1
for i = 2, #ARGV do
  redis.call('LPUSH', KEYS[1], ARGV[i])
end
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[1]) - 1)
redis.call('HINCRBY', KEYS[2], 'unreadable', n)
redis.call('HINCRBY', KEYS[2], 'delivered', -n)
return redis.call('LLEN', KEYS[1])
