-- lib/meta.lua: A job's meta "state|attempts|max|enqueued ms|x" and its lease token (docs/data-model.md, "Job meta").

-- state, attempts, max, enqueued, x: all strings (see "Job meta"); nil when `m` does not parse.
-- A completed job's meta may go on with "|<start ms>|<worker id>" (its last attempt's run,
-- returned sixth as "<start ms>|<worker id>"); older values without it still parse.
local function parse_meta(m)
  local s, a, mx, enq, x, rest = string.match(m, '^([qcx])|(%d+)|(%d+)|(%d+)|(%d+)(.*)$')
  if rest and rest ~= '' then
    if s ~= 'c' or string.byte(rest, 1) ~= 124 then return nil end
    return s, a, mx, enq, x, string.sub(rest, 2)
  end
  return s, a, mx, enq, x
end

local function meta_of(s, a, mx, enq, x)
  return s .. '|' .. a .. '|' .. mx .. '|' .. enq .. '|' .. x
end

local function token_of(enq, x)
  return enq .. '.' .. x
end
