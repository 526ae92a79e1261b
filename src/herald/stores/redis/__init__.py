"""Stores on Redis: the job store and the event log that replicas and workers share.

Built on what Redis was made for. Every key of one job carries the hash tag `{job:ID}`,
and every key of one session `{s:ID}`, so each job's (and each session's) keys live in
one slot and Redis Cluster works; a job's changes are Lua scripts over those keys alone.

- `client`: the client every store makes (`connect_redis`: pooled, reconnecting), Redis
  errors as `StoreError` where they leave it (`StoreRedis`), and following a pub/sub channel
  (`follow_channel`).
- `scripts`: the Lua scripts (`record.lua`, `create.lua`, `append.lua` beside it), read
  once at import, and the transition table the record script checks (`transition_table_lua`).
- `jobs`: `RedisJobStore`, jobs, their events, indexes, leases and the job queue.
- `eventlog`: `RedisEventLog`, the HTTP event log.
- `sessions`: `RedisSessionStore`, the sessions and messages of replicas.
"""

from herald.stores.redis.eventlog import RedisEventLog
from herald.stores.redis.jobs import RedisJobStore
from herald.stores.redis.scripts import transition_table_lua
from herald.stores.redis.sessions import RedisSessionStore

__all__ = ["RedisEventLog", "RedisJobStore", "RedisSessionStore", "transition_table_lua"]
