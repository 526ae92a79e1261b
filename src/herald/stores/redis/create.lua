-- The create script: a new job's two hashes and its first event, unless the id is taken.
-- KEYS: meta, status, events. ARGV: event json, the hint channel and message, this try's
-- token, then meta pairs, '|', status pairs. The hint wakes workers for a job queued with
-- no worker. The token tells the creator's own earlier try (sent again after a lost
-- connection, its answer lost) from another job with the same id.
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'attempt') == ARGV[4] then return 'ok' end
  return 'exists'
end
local split = 0
for index = 5, #ARGV do if ARGV[index] == '|' then split = index end end
redis.call('HSET', KEYS[1], 'attempt', ARGV[4], unpack(ARGV, 5, split - 1))
redis.call('HSET', KEYS[2], unpack(ARGV, split + 1))
redis.call('XADD', KEYS[3], '1-0', 'e', ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 'ok'
