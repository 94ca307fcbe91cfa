--[[ Complete leased jobs (a worker's acks when it has nothing to fetch; otherwise they ride on
  fetch_jobs). Only the holder of a job's current delivery may complete it; a stale token gets -1
  for that job (LEASE_LOST) and changes nothing. Then trims retained completed jobs to the newest
  ARGV[1] and those younger than ARGV[2] ms.
  KEYS[1] active zset   KEYS[2] done list (retained completed ids, oldest first)   KEYS[3] jobs hash
  KEYS[4] meta hash   KEYS[5] errors hash   KEYS[6] stats hash
  ARGV[1] keep last N completed (0 = delete at once)   ARGV[2] keep for ms (0 = no age limit)
  ARGV[3], ARGV[4], ...: pairs of job id, lease token
  Returns: array with, per pair, 1 completed or -1 lease lost. ]]
--#include lib_jobs.lua
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local K = { active = KEYS[1], done = KEYS[2], jobs = KEYS[3], meta = KEYS[4], errors = KEYS[5],
  stats = KEYS[6] }
return complete_leases(K, now, tonumber(ARGV[1]), tonumber(ARGV[2]), 3)
