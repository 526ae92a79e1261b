-- The record script: one job's chain of events, written whole or not at all.
-- KEYS: status, events. ARGV[1]: one JSON array: the sequence expected before the chain (as
-- stored), the hint channel and message, the job's last status as field/value pairs, and
-- the chain's events, each [input, percentage, event json, sequence, status after]. One
-- argument, not twenty-five: packing each argument is most of what a call costs redis-py.
-- Every event is checked against the table and the progress before any is written, so a
-- chain is written whole or not at all. Answers ok | missing | changed | illegal | backwards.
-- `MOVES` is replaced, when `scripts.py` reads this file, by the table of moves
-- generated from `herald.jobs.machine.TRANSITIONS`: never write the table here by hand.
local moves = MOVES
local change = cjson.decode(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
local current = redis.call('HMGET', KEYS[1], 'sequence', 'status', 'percentage')
if current[1] ~= change[1] then return 'changed' end
local status, percentage = cjson.decode(current[2]), tonumber(current[3])
for _, event in ipairs(change[5]) do
  if not moves[status .. '|' .. event[1]] then return 'illegal' end
  if event[1] == 'progress' then
    if event[2] < percentage then return 'backwards' end
    percentage = event[2]
  end
  status = event[5]
end
for _, event in ipairs(change[5]) do
  redis.call('XADD', KEYS[2], event[4] .. '-0', 'e', event[3])
end
redis.call('HSET', KEYS[1], unpack(change[4]))
redis.call('PUBLISH', change[2], change[3])
return 'ok'
