-- lib/chunked.lua: Variadic commands in runs of at most 1000 arguments (`chunked`, `chunked_read`, `hmget`).

-- Lists whose length callers or data decide are passed to commands at most 1000 values per
-- call: Lua's unpack stops near 8,000 values, and a script that fails half-way keeps its writes.
-- Every unpack of such a list goes through `chunked` or `chunked_read` (a test checks the
-- scripts for others).
local function chunked(cmd, key, args)
  for i = 1, #args, 1000 do
    redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args)))
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
