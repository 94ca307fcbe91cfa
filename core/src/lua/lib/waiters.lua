-- lib/waiters.lua: Finish notices to waiting processes (docs/data-model.md, "Waiters").
--#include lib/chunked.lua

-- Tells the waiters of finished jobs (see "Waiters" above): `done` is a list of { id, enqueued,
-- notice kind and data }. Callers first check that the waiters hash exists (one EXISTS), so a
-- queue nobody waits on pays nothing more.
local function notify_waiters(K, done)
  if #done == 0 then return end
  local ids = {}
  for i, d in ipairs(done) do ids[i] = d[1] end
  local hubs = hmget(K.waiters, ids)
  local told = {}
  for i, d in ipairs(done) do
    if hubs[i] then
      local notice = #d[1] .. ':' .. d[1] .. d[2] .. '|' .. d[3]
      for hub in string.gmatch(hubs[i], '(%w+)=%d+') do
        redis.call('RPUSH', K.fin .. hub, notice)
        redis.call('PEXPIRE', K.fin .. hub, 60000)
      end
      told[#told + 1] = d[1]
    end
  end
  if #told > 0 then chunked('HDEL', K.waiters, told) end
end
