-- lib/base.lua: Primitives: the Redis time, which optional keys exist, waking idle workers.

-- Which of the keys K[names[i]] exist, in a call per three names: EXISTS counts a key once per
-- mention, so each is named 1, 2 or 4 times and the count's bits say which exist. Sets K.has
-- (name -> bool), which `key_exists` then answers from: a script sets it only for keys it never
-- creates.
local function exist_bits(K, names)
  K.has = {}
  -- Three names a call: their count answers for each (1, 2 and 4 times named: 7 arguments).
  -- One call for more names would take 2^n - 1 arguments, each costing Redis about 850
  -- instructions: six names took 100,000 instructions in one call, 27,000 in two.
  for i = 1, #names, 3 do
    local a, b, c = K[names[i]], K[names[i + 1]], K[names[i + 2]]
    local n
    if c then
      n = redis.call('EXISTS', a, b, b, c, c, c, c)
    elseif b then
      n = redis.call('EXISTS', a, b, b)
    else
      n = redis.call('EXISTS', a)
    end
    K.has[names[i]] = n % 2 == 1
    if b then K.has[names[i + 1]] = math.floor(n / 2) % 2 == 1 end
    if c then K.has[names[i + 2]] = n >= 4 end
  end
  return K.has
end

-- Whether key K[name] exists (from K.has when the script looked already, see exist_bits).
local function key_exists(K, name)
  if K.has and K.has[name] ~= nil then return K.has[name] end
  return redis.call('EXISTS', K[name]) == 1
end

-- Jobs that no longer wait to start forget their deadline (see "Expiry"): a script without the
-- expires key has none to forget, nor has a queue that never used deadlines (cfg "expires" unset,
-- see queue_cfg).
local function drop_expiry(K, ids)
  if #ids > 0 and K.expires and not K.no_expires and key_exists(K, 'expires') then
    for i = 1, #ids, 1000 do
      redis.call('ZREM', K.expires, unpack(ids, i, math.min(i + 999, #ids)))
    end
  end
end

local function now_ms()
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

-- One call in the common case: the list is given its minute to live when this push creates it
-- (an idle worker's BLPOP empties it, so most pushes do), and trimmed only once it holds more
-- than 64 wake-ups (no worker is waiting then). A list that outlives its minute unread is
-- dropped: no worker was blocked on it, and one that comes looks for jobs before it blocks.
local function wake(key)
  local n = redis.call('RPUSH', key, '1')
  if n == 1 then
    redis.call('PEXPIRE', key, 60000)
  elseif n > 64 then
    redis.call('LTRIM', key, -64, -1)
  end
end
