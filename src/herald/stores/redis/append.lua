-- The append script: the next position of an event log's stream, and the event at it.
-- KEYS: stream, counter, job index. ARGV: data, job id or '', sequence or ''. Answers the position.
local position = redis.call('INCR', KEYS[2])
if ARGV[2] == '' then
  redis.call('XADD', KEYS[1], position .. '-0', 'd', ARGV[1])
else
  redis.call('XADD', KEYS[1], position .. '-0', 'j', ARGV[2], 's', ARGV[3])
  redis.call('HSETNX', KEYS[3], ARGV[2] .. ':' .. ARGV[3], position)
end
return position
