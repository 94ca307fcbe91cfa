-- lib/chunked.lua: Variadic commands in runs of at most 1000 arguments (`chunked`, `chunked_read`, `hmget`).

-- Lists whose length callers or data decide are passed to commands at most 1000 values per
-- call: Lua's unpack stops near 8,000 values, and a script that fails half-way keeps its writes.
-- Every unpack of such a list goes through `chunked` or `chunked_read` (a test checks the
-- scripts for others).
--
-- A run of more than 128 fields into one hash first makes it a hash table. Redis keeps a small
-- hash as one listpack (up to hash-max-listpack-entries fields: 512 on a server started without
-- a config file) and finds each field by scanning it, so filling one with a run of hundreds of
-- fields takes time quadratic in the run (measured: 500 fields into a new hash, about 1 ms of
-- Redis time; into a hash table, 0.2 ms). Redis converts a listpack given a value longer than
-- hash-max-listpack-value (64 by default): the first run carries one such value under the field
-- "" (no job id, group or name is empty), removed at once. (An ACL user set up before OBJECT
-- was among a role's commands gets an error here, taken as "not a hash table yet".)
local function chunked(cmd, key, args)
  local n, from = #args, 1
  if n > 256 and cmd == 'HSET' and redis.pcall('OBJECT', 'ENCODING', key) ~= 'hashtable' then
    redis.call('HSET', key, '', string.rep('-', 4096), unpack(args, 1, math.min(998, n))) -- bounded: 998
    redis.call('HDEL', key, '')
    from = 999
  end
  for i = from, n, 1000 do
    redis.call(cmd, key, unpack(args, i, math.min(i + 999, n)))
  end
end

-- A reading command (HMGET, ZMSCORE, SMISMEMBER) over `fields` in runs of 1000, its replies
-- joined in order.
local function chunked_read(cmd, key, fields)
  local n = #fields
  if n == 0 then return {} end
  -- One run (the common case): its reply as it is.
  if n <= 1000 then return redis.call(cmd, key, unpack(fields)) end -- bounded: 1000
  local out, k = {}, 0
  for i = 1, n, 1000 do
    local part = redis.call(cmd, key, unpack(fields, i, math.min(i + 999, n)))
    for j = 1, #part do
      k = k + 1
      out[k] = part[j]
    end
  end
  return out
end

local function hmget(key, fields)
  return chunked_read('HMGET', key, fields)
end
