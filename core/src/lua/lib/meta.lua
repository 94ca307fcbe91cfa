-- lib/meta.lua: A job's meta "state|attempts|max|enqueued ms|x" and its lease token (docs/data-model.md, "Job meta").

-- state, attempts, max, enqueued, x: all strings (see "Job meta"); nil when `m` does not parse.
local function parse_meta(m)
  return string.match(m, '^([qcx])|(%d+)|(%d+)|(%d+)|(%d+)$')
end

local function meta_of(s, a, mx, enq, x)
  return s .. '|' .. a .. '|' .. mx .. '|' .. enq .. '|' .. x
end

local function token_of(enq, x)
  return enq .. '.' .. x
end
