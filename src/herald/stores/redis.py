"""Stores on Redis: the job store and the event log that replicas and workers share.

Built on what Redis was made for. Every key of one job carries the hash tag `{job:ID}`,
and every key of one session `{s:ID}`, so each job's (and each session's) keys live in
one slot and Redis Cluster works; a job's changes are Lua scripts over those keys alone.

- A job is two hashes (what started it, written once; its status, rewritten by each
  event), a Stream of its events whose entry ids are the event sequence (`N-0`), a hash
  of its results and a string with its checkpoint.
- Every state change is one script: it checks the compare-and-set on the sequence, the
  transition table (generated from `herald.jobs.machine.TRANSITIONS`), that progress does
  not go back, and appends the event and rewrites the status, atomically.
- Indexes that span jobs (creation order, owners, unfinished and ended jobs, workers'
  leases, expired ids) are sorted sets and sets of their own, kept next to the scripts.
  They are written before a job exists and cleaned after it is gone, so a crash in
  between leaves an index naming nothing (skipped), never a job no index finds.
- The jobs created with no worker (a serve-only replica's) are queued in a Stream per tool,
  read by the consumer group `workers` (`XREADGROUP`) of the workers that run that tool
  (so none is handed a job it cannot run): each entry goes to one worker, which
  holds it while the job runs (`XCLAIM` to itself with every lease renewal, which resets
  its idle time) and acknowledges and deletes it once the job ends. An entry idle for a
  lease period belongs to a stopped worker, and another takes it over (`XAUTOCLAIM`).
  The entry is added before the job is created, so no queued job lacks one; an entry
  whose job never appeared is acknowledged after a lease period. A job its worker hands
  back at a clean stop (recorded with no worker, still running) is queued the same way.
  A group Redis lost (it came back empty) is made again when a command meets NOGROUP.
- The event log keeps each stream as a Stream too, positions as entry ids.

Commands lost with their connection are sent again on a new one (`connect_redis`), so a
Redis restart of a few seconds is a pause. Redis errors become `StoreError`, the original
chained.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Final

import orjson
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import NoScriptError, RedisError, ResponseError

from herald.jobs.events import INPUT_OF_KIND, JobEvent
from herald.jobs.machine import TRANSITIONS, IllegalTransition, Outcome
from herald.jobs.record import STATUS_FIELDS, JobRecord, epoch_seconds
from herald.jobs.store import Hear, JobChanged, QueueEntry, Subscribed
from herald.stores.errors import JobMissing, StoreError
from herald.stores.eventlog import JobEventReference, StoredEvent
from herald.stores.group_writer import GroupWriter
from herald.stores.sessions import HearMessage, SessionRecord

logger = logging.getLogger("herald.stores")

#: Changes of one job, in order: the job as each event left it, and the event.
Chain = list[tuple[JobRecord, JobEvent]]

#: The consumer group of the workers that read the job queue.
QUEUE_GROUP: Final = "workers"


def transition_table_lua() -> str:
    """The moves `TRANSITIONS` allows, as a Lua table `status|input -> true` (generated, not copied)."""
    moves = sorted(
        f'["{status.value}|{event.value}"] = true'
        for (status, event), (outcome, _) in TRANSITIONS.items()
        if outcome is Outcome.MOVE
    )
    return "{" + ", ".join(moves) + "}"


#: KEYS: status, events. ARGV[1]: one JSON array: the sequence expected before the chain (as
#: stored), the hint channel and message, the job's last status as field/value pairs, and
#: the chain's events, each [input, percentage, event json, sequence, status after]. One
#: argument, not twenty-five: packing each argument is most of what a call costs redis-py.
#: Every event is checked against the table and the progress before any is written, so a
#: chain is written whole or not at all. Answers ok | missing | changed | illegal | backwards.
RECORD_SCRIPT: Final = f"""
local moves = {transition_table_lua()}
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
"""

#: KEYS: meta, status, events. ARGV: event json, the hint channel and message, this try's
#: token, then meta pairs, '|', status pairs. The hint wakes workers for a job queued with
#: no worker. The token tells the creator's own earlier try (sent again after a lost
#: connection, its answer lost) from another job with the same id.
CREATE_SCRIPT: Final = """
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
"""

#: KEYS: stream, counter, job index. ARGV: data, job id or '', sequence or ''. Answers the position.
APPEND_SCRIPT: Final = """
local position = redis.call('INCR', KEYS[2])
if ARGV[2] == '' then
  redis.call('XADD', KEYS[1], position .. '-0', 'd', ARGV[1])
else
  redis.call('XADD', KEYS[1], position .. '-0', 'j', ARGV[2], 's', ARGV[3])
  redis.call('HSETNX', KEYS[3], ARGV[2] .. ':' .. ARGV[3], position)
end
return position
"""

#: A lease that lapsed this long ago is dropped on the next renewal of any worker.
FORGET_LEASES_AFTER: Final = 3600.0


#: How long one read of the hint subscription waits: also how long it takes to stop.
HINT_WAIT_SECONDS: Final = 0.5

#: Connections one store opens to Redis at most. A burst of calls beyond that (100 jobs
#: starting at once) waits for a free connection, up to `POOL_WAIT_SECONDS`, instead of
#: failing, so each replica and worker costs Redis a bounded number of clients.
POOL_CONNECTIONS: Final = 32
POOL_WAIT_SECONDS: Final = 20.0


#: A command that loses its connection is sent again on a new one, after pauses that double
#: from 0.1 s to 1 s, this many times: about 7.5 s in all. A Redis restart or a failover
#: of a few seconds is then a pause, not an error, and a pooled connection the restart
#: closed is replaced at its next use instead of failing it.
RECONNECT_TRIES: Final = 10
RECONNECT_FIRST_PAUSE: Final = 0.05
RECONNECT_LONGEST_PAUSE: Final = 1.0


def connect_redis(url: str) -> aioredis.Redis:
    """A client for `url` whose connections are pooled and bounded (`POOL_CONNECTIONS`), and
    re-made when Redis drops them (`RECONNECT_TRIES`).

    A command sent again may have run once already (its answer was what got lost); every
    write here is safe to repeat: a job's changes are compare-and-set on its sequence, its
    creation recognises its own earlier try, and an index or queue entry written twice
    names the same job.
    """
    retry = Retry(ExponentialBackoff(RECONNECT_LONGEST_PAUSE, RECONNECT_FIRST_PAUSE), RECONNECT_TRIES)
    pool = aioredis.BlockingConnectionPool.from_url(
        url, max_connections=POOL_CONNECTIONS, timeout=POOL_WAIT_SECONDS, retry=retry
    )
    return aioredis.Redis.from_pool(pool)


async def _guarded(call: Awaitable[Any]) -> Any:
    """Await a Redis call; its errors become `StoreError`.

    redis-py types its answers as unions of every shape a reply could take; the callers
    here know the one shape each command gives (bytes: the clients never decode) and
    convert at once, so the answer is `Any` at this one boundary.
    """
    try:
        return await call
    except RedisError as exc:
        raise StoreError(f"Redis refused: {exc}") from exc


async def follow_channel(
    client: aioredis.Redis, channel: str, hear: HearMessage, subscribed: Subscribed | None = None
) -> None:
    """Hear every message published on `channel` from now on, until cancelled.

    A lost connection is made again and the channel subscribed again (the client's
    retries); messages published meanwhile are lost, which is why `subscribed` is called
    each time Redis confirms the subscription: what must not be lost is in a store, and
    the caller reads it then.

    The subscription is read by a task of its own that is never cancelled: a redis-py
    read cancelled half-way can leave its connection unable to close, which held up
    shutdown. Cancelling this call tells the reader to stop, and it does within
    `HINT_WAIT_SECONDS`, closing its subscription cleanly.
    """
    stop = asyncio.Event()
    reader = asyncio.get_running_loop().create_task(_read_channel(client, channel, hear, subscribed, stop))
    try:
        await asyncio.shield(reader)
    finally:
        stop.set()
        # Owned here: it ends before this call does (cancelled, as a last resort, if a
        # read outlives its own timeout several times over).
        if not (await asyncio.wait({reader}, timeout=4 * HINT_WAIT_SECONDS))[0]:
            reader.cancel()
            await asyncio.wait({reader}, timeout=4 * HINT_WAIT_SECONDS)


async def _read_channel(
    client: aioredis.Redis,
    channel: str,
    hear: HearMessage,
    subscribed: Subscribed | None,
    stop: asyncio.Event,
) -> None:
    pubsub = client.pubsub()
    try:
        await _guarded(pubsub.subscribe(channel))
        while not stop.is_set():
            message = await _guarded(pubsub.get_message(timeout=HINT_WAIT_SECONDS))
            if message is None:
                continue
            if message.get("type") == "message":
                await hear(bytes(message["data"]))
            elif message.get("type") == "subscribe" and subscribed is not None:
                await subscribed()
    finally:
        await pubsub.aclose()  # type: ignore[no-untyped-call]  # redis-py leaves it untyped


def _record_outcome(chain: Chain, answer: Any) -> Exception | None:
    """What one record script's answer means for its caller."""
    job = chain[0][0]
    if isinstance(answer, RedisError):
        return StoreError(f"Redis refused: {answer}")
    if answer == b"missing":
        return JobMissing(job.job_id)
    if answer == b"changed":
        return JobChanged(job.job_id)
    if answer in (b"illegal", b"backwards"):
        kinds = ", ".join(event.kind for _, event in chain)
        return IllegalTransition(f"the store refused {kinds} for job {job.job_id!r} ({answer.decode()})")
    return None


def _queue_entry(tool: str, entry: bytes, fields: dict[bytes, bytes]) -> QueueEntry:
    return QueueEntry(entry.decode(), fields[b"job"].decode(), tool)


def _by_tool(entries: list[QueueEntry]) -> dict[str, list[Any]]:
    """Entry ids by the queue (the tool) they are in."""
    grouped: dict[str, list[Any]] = {}
    for entry in entries:
        grouped.setdefault(entry.tool, []).append(entry.entry)
    return grouped


def _status_pairs(job: JobRecord) -> list[Any]:
    values = {name: getattr(job, name) for name in STATUS_FIELDS}
    pairs: list[Any] = []
    for name, value in values.items():
        pairs += [name, orjson.dumps(value)]
    return pairs


def _status_strings(job: JobRecord) -> list[str]:
    """The status as field/value pairs of strings (each value JSON), for a script to unpack."""
    pairs: list[str] = []
    for name in STATUS_FIELDS:
        pairs += [name, orjson.dumps(getattr(job, name)).decode()]
    return pairs


class RedisJobStore:
    """A `JobStore` on Redis, shared by every replica and worker that opens the same database."""

    durable = True

    def __init__(
        self, client: aioredis.Redis, *, prefix: str = "herald", clock: Callable[[], float] = time.time
    ) -> None:
        self._redis = client
        self._prefix = prefix
        self._clock = clock
        self._record = client.register_script(RECORD_SCRIPT)
        self._create = client.register_script(CREATE_SCRIPT)
        #: The events of concurrent jobs go to Redis together, one pipeline at a time.
        self._records: GroupWriter[Chain] = GroupWriter(self._record_batch)
        #: The tools whose queue has the workers' group (made once, by whoever reads first).
        self._grouped: set[str] = set()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisJobStore:
        return cls(connect_redis(url), **options)

    def _key(self, job_id: str, part: str) -> str:
        return f"{self._prefix}:{{job:{job_id}}}:{part}"

    def _index(self, name: str) -> str:
        return f"{self._prefix}:{name}"

    async def create(self, job: JobRecord, event: JobEvent) -> None:
        fixed = {
            "tool": job.tool,
            "created_at": job.created_at,
            "owner": job.owner,
            "progress_token": job.progress_token,
            "arguments": job.arguments,
            "retain_seconds": job.retain_seconds,
        }
        meta: list[Any] = []
        for name, value in fixed.items():
            meta += [name, orjson.dumps(value)]
        order = await _guarded(self._redis.incr(self._index("job-counter")))
        async with self._redis.pipeline(transaction=False) as indexes:
            if job.worker is None and not job.terminal:  # queued: for a worker of its tool
                indexes.xadd(self._queue(job.tool), {"job": job.job_id})
            indexes.zadd(self._index("jobs"), {job.job_id: order})
            if job.owner is not None:
                indexes.zadd(self._index(f"owner:{job.owner}"), {job.job_id: order})
            if not job.terminal:
                indexes.zadd(self._index("unfinished"), {job.job_id: order})
            await _guarded(indexes.execute())
        keys = [
            self._key(job.job_id, "meta"),
            self._key(job.job_id, "status"),
            self._key(job.job_id, "events"),
        ]
        hint = [self._index("job-events"), f"{job.job_id}|{event.sequence}"]
        attempt = secrets.token_hex(8)
        args = [orjson.dumps(event.to_params()), *hint, attempt, *meta, "|", *_status_pairs(job)]
        if await _guarded(self._create(keys=keys, args=args)) == b"exists":
            raise StoreError(f"a job {job.job_id!r} exists already")

    async def record(self, job: JobRecord, event: JobEvent) -> None:
        await self.record_chain([(job, event)])

    async def record_chain(self, chain: list[tuple[JobRecord, JobEvent]]) -> None:
        for _, event in chain:
            if event.kind not in INPUT_OF_KIND:
                raise StoreError(f"an event of kind {event.kind!r} changes no job")
        last = chain[-1][0]
        if last.worker is None and not last.terminal:
            # Handed back by its worker (a clean shutdown): queued again, entry first, as
            # `create` queues a job. An entry whose write is then refused names a job that
            # still has its worker, and is dropped by whoever reads it.
            await _guarded(self._redis.xadd(self._queue(last.tool), {"job": last.job_id}))
        await self._records.write(chain)

    async def _record_batch(self, batch: list[Chain]) -> list[Exception | None]:
        """One pipeline of scripts for the batch (each its own atomic compare-and-set)."""
        answers: list[Any]
        if len(batch) == 1:  # alone: a pipeline would only add to its one round trip
            try:
                answers = [
                    await self._record(keys=self._record_keys(batch[0]), args=self._record_args(batch[0]))
                ]
            except RedisError as refused:
                answers = [refused]
        else:
            answers = await self._record_pipelined(batch)
        outcomes = [_record_outcome(chain, answer) for chain, answer in zip(batch, answers, strict=True)]
        ended = [
            chain[-1][0]
            for chain, outcome in zip(batch, outcomes, strict=True)
            if outcome is None and chain[-1][0].terminal
        ]
        if ended:
            try:
                async with self._redis.pipeline(transaction=False) as indexes:
                    indexes.zrem(self._index("unfinished"), *(job.job_id for job in ended))
                    indexes.zadd(
                        self._index("ended"), {job.job_id: epoch_seconds(job.updated_at) for job in ended}
                    )
                    await _guarded(indexes.execute())
            except StoreError as refused:  # the endings are stored: only the indexes lag
                # `unfinished` skips ended jobs; retention, which reads `ended`, misses these.
                logger.warning("the index of ended jobs missed %d job(s): %s", len(ended), refused)
        return outcomes

    async def _record_pipelined(self, batch: list[Chain]) -> list[Any]:
        """The record script's answers for a batch, from one pipeline of `EVALSHA`s.

        Called by hash, not as a redis-py script object, which would ask Redis whether the
        script exists on every pipeline. A Redis that lost its scripts (restarted) answers
        NOSCRIPT without running the call; those calls alone are sent again once the
        script is loaded.
        """
        answers: list[Any] = [None] * len(batch)
        unsent = list(range(len(batch)))
        for attempt in range(2):
            async with self._redis.pipeline(transaction=False) as scripts:
                for index in unsent:
                    chain = batch[index]
                    scripts.evalsha(self._record.sha, 2, *self._record_keys(chain), *self._record_args(chain))
                for index, answer in zip(
                    unsent, await _guarded(scripts.execute(raise_on_error=False)), strict=True
                ):
                    answers[index] = answer
            unsent = [index for index in unsent if isinstance(answers[index], NoScriptError)]
            if not unsent or attempt:
                break
            await _guarded(self._redis.script_load(RECORD_SCRIPT))
        return answers

    def _record_keys(self, chain: Chain) -> list[str]:
        job_id = chain[0][0].job_id
        return [self._key(job_id, "status"), self._key(job_id, "events")]

    def _record_args(self, chain: Chain) -> list[Any]:
        last, first = chain[-1], chain[0][1]
        events = [
            [
                INPUT_OF_KIND[event.kind].value,
                job.percentage,
                orjson.dumps(event.to_params()).decode(),
                str(event.sequence),
                job.status,
            ]
            for job, event in chain
        ]
        hint = f"{last[0].job_id}|{last[1].sequence}"
        change = [str(first.sequence - 1), self._index("job-events"), hint, _status_strings(last[0]), events]
        return [orjson.dumps(change)]

    async def get(self, job_id: str) -> JobRecord | None:
        return (await self._get_many([job_id]))[0]

    async def _get_many(self, job_ids: list[str]) -> list[JobRecord | None]:
        """The jobs, in one round trip however many (a worker looks at every queued one)."""
        async with self._redis.pipeline(transaction=False) as reads:
            for job_id in job_ids:
                reads.hgetall(self._key(job_id, "meta"))
                reads.hgetall(self._key(job_id, "status"))
            found = await _guarded(reads.execute())
        jobs: list[JobRecord | None] = []
        for job_id, meta, status in zip(job_ids, found[::2], found[1::2], strict=True):
            if not meta or not status:
                jobs.append(None)
                continue
            values = {
                name.decode(): orjson.loads(value)
                for name, value in {**meta, **status}.items()
                if name != b"attempt"
            }
            jobs.append(JobRecord(job_id=job_id, **values))
        return jobs

    async def events_after(self, job_id: str, sequence: int = 0) -> list[JobEvent]:
        entries = await _guarded(self._redis.xrange(self._key(job_id, "events"), f"{sequence + 1}-0", "+"))
        return [JobEvent.from_params(orjson.loads(fields[b"e"])) for _, fields in entries]

    async def _jobs(self, index: str) -> list[JobRecord]:
        ids = await _guarded(self._redis.zrange(self._index(index), 0, -1))
        found = await self._get_many([job_id.decode() for job_id in ids]) if ids else []
        return [job for job in found if job is not None]

    async def unfinished(self) -> list[JobRecord]:
        return [job for job in await self._jobs("unfinished") if not job.terminal]

    async def renew_lease(self, worker: str, seconds: float) -> None:
        now = self._clock()
        async with self._redis.pipeline(transaction=False) as leases:
            leases.zadd(self._index("workers"), {worker: now + seconds})
            leases.zremrangebyscore(self._index("workers"), "-inf", now - FORGET_LEASES_AFTER)
            await _guarded(leases.execute())

    async def release_lease(self, worker: str) -> None:
        await _guarded(self._redis.zrem(self._index("workers"), worker))

    async def orphaned(self) -> list[JobRecord]:
        live = {
            worker.decode()
            for worker in await _guarded(
                self._redis.zrangebyscore(self._index("workers"), self._clock(), "+inf")
            )
        }
        return [job for job in await self.unfinished() if job.worker is None or job.worker not in live]

    async def job_ids(self, owner: str | None = None) -> list[str]:
        index = "jobs" if owner is None else f"owner:{owner}"
        return [job_id.decode() for job_id in await _guarded(self._redis.zrange(self._index(index), 0, -1))]

    async def save_checkpoint(self, job_id: str, state: bytes) -> None:
        await _guarded(self._redis.set(self._key(job_id, "checkpoint"), state))

    async def load_checkpoint(self, job_id: str) -> bytes | None:
        found: bytes | None = await _guarded(self._redis.get(self._key(job_id, "checkpoint")))
        return found

    async def put_result(self, job_id: str, name: str, mime_type: str, data: bytes) -> None:
        await _guarded(
            self._redis.hset(
                self._key(job_id, "results"), mapping={f"m:{name}": mime_type, f"d:{name}": data}
            )
        )

    async def get_result(self, job_id: str, name: str) -> tuple[str, bytes] | None:
        mime_type, data = await _guarded(
            self._redis.hmget(self._key(job_id, "results"), [f"m:{name}", f"d:{name}"])
        )
        return (mime_type.decode(), bytes(data)) if mime_type is not None and data is not None else None

    async def prune(self, now: float, retention: float) -> list[str]:
        ended = await _guarded(self._redis.zrangebyscore(self._index("ended"), "-inf", now, withscores=True))
        gone: list[str] = []
        for raw, ended_at in ended:
            job_id = raw.decode()
            kept = await _guarded(self._redis.hget(self._key(job_id, "meta"), "retain_seconds"))
            own = orjson.loads(kept) if kept is not None else None
            if ended_at + (own if own is not None else retention) >= now:
                continue
            job = await self.get(job_id)
            async with self._redis.pipeline(transaction=False) as forget:
                forget.sadd(self._index("expired"), job_id)
                forget.delete(
                    *(
                        self._key(job_id, part)
                        for part in ("meta", "status", "events", "results", "checkpoint")
                    )
                )
                forget.zrem(self._index("jobs"), job_id)
                forget.zrem(self._index("ended"), job_id)
                if job is not None and job.owner is not None:
                    forget.zrem(self._index(f"owner:{job.owner}"), job_id)
                await _guarded(forget.execute())
            gone.append(job_id)
        return gone

    async def expired(self, job_id: str) -> bool:
        return bool(await _guarded(self._redis.sismember(self._index("expired"), job_id)))

    def _queue(self, tool: str) -> str:
        return self._index(f"queue:{tool}")

    async def read_queue(self, worker: str, tools: list[str], count: int) -> list[QueueEntry]:
        read: list[QueueEntry] = []
        for tool in tools:
            if len(read) >= count:
                break
            streams: dict[Any, Any] = {self._queue(tool): ">"}
            read_group = partial(
                self._redis.xreadgroup, QUEUE_GROUP, worker, streams, count=count - len(read)
            )
            found: Any = await self._on_queue(tool, read_group)
            read += [
                _queue_entry(tool, entry, fields) for _, entries in found or () for entry, fields in entries
            ]
        return read

    async def _on_queue(self, tool: str, command: Callable[[], Awaitable[Any]]) -> Any:
        """Run a command that needs the workers' group of a tool's queue, making the group first.

        A Redis that restarted empty (or was flushed, or failed over to an empty replica)
        has lost the group, and every read and claim answers NOGROUP: the group is made
        again then, from the queue's start, so the jobs queued since are read, and the
        command is sent once more.
        """
        for attempt in range(2):
            if tool not in self._grouped:
                await self._make_queue_group(tool)
            try:
                return await command()
            except ResponseError as refused:
                if "NOGROUP" not in str(refused) or attempt:
                    raise StoreError(f"Redis refused: {refused}") from refused
                logger.warning("the job queue of %s had lost its workers' group; it is made again", tool)
                self._grouped.discard(tool)
            except RedisError as exc:
                raise StoreError(f"Redis refused: {exc}") from exc
        raise AssertionError("unreachable: the second try returns or raises")

    async def _make_queue_group(self, tool: str) -> None:
        """Create the workers' group of a tool's queue, from its start (earlier entries are read)."""
        try:
            await self._redis.xgroup_create(self._queue(tool), QUEUE_GROUP, id="0", mkstream=True)
        except ResponseError as refused:
            if "BUSYGROUP" not in str(refused):  # another worker created it first: fine
                raise StoreError(f"Redis refused: {refused}") from refused
        except RedisError as exc:
            raise StoreError(f"Redis refused: {exc}") from exc
        self._grouped.add(tool)

    async def take_over_queued(
        self, worker: str, tools: list[str], idle_seconds: float, count: int
    ) -> list[QueueEntry]:
        idle, taken = max(int(idle_seconds * 1000), 1), []
        for tool in tools:
            claim = partial(
                self._redis.xautoclaim, self._queue(tool), QUEUE_GROUP, worker, idle, "0-0", count=count
            )
            answer: Any = await self._on_queue(tool, claim)
            taken += [_queue_entry(tool, entry, fields) for entry, fields in answer[1] if fields]
        return taken

    async def hold_queued(self, worker: str, entries: list[QueueEntry]) -> None:
        for tool, held in _by_tool(entries).items():
            claim = partial(self._redis.xclaim, self._queue(tool), QUEUE_GROUP, worker, 0, held, justid=True)
            await self._on_queue(tool, claim)

    async def acknowledge_queued(self, entries: list[QueueEntry]) -> None:
        if entries:
            async with self._redis.pipeline(transaction=False) as done:
                for tool, acknowledged in _by_tool(entries).items():
                    done.xack(self._queue(tool), QUEUE_GROUP, *acknowledged)
                    done.xdel(self._queue(tool), *acknowledged)
                await _guarded(done.execute())

    async def follow_writers(self, hear: Hear, subscribed: Subscribed | None = None) -> None:
        """Hear of every event written to this store, by any process, until cancelled.

        A hint only (pub/sub, at most once): `hear(job_id, sequence)` reads the events from
        the job's Stream, which is the truth, so a lost hint only delays what the next one
        (or a poll) brings. The writer hears its own hints too, and ignores what it has told.
        `subscribed` is called whenever the hints start to come, at first and again after
        Redis came back: the hints of the time between are lost, and it catches up on them.
        """

        async def hint(data: bytes) -> None:
            job_id, _, sequence = data.decode().rpartition("|")
            await hear(job_id, int(sequence))

        await follow_channel(self._redis, self._index("job-events"), hint, subscribed)

    async def durability_warning(self) -> str | None:
        """One line when Redis could lose what it was told (no append-only file), else None."""
        try:
            settings: dict[Any, Any] = await self._redis.config_get("appendonly")
        except RedisError:
            return None  # CONFIG may be disabled (managed Redis): nothing to say for sure
        if {settings.get(b"appendonly"), settings.get("appendonly")} & {b"no", "no"}:
            return (
                "Redis runs without an append-only file (appendonly no): a Redis restart loses "
                "jobs and events written since its last snapshot; set appendonly yes."
            )
        return None

    async def aclose(self) -> None:
        await self._records.aclose()
        await self._redis.aclose()


class RedisEventLog:
    """An `EventLog` on Redis: one Stream per stream of a session, positions as entry ids."""

    def __init__(self, client: aioredis.Redis, *, prefix: str = "herald") -> None:
        self._redis = client
        self._prefix = prefix
        self._append = client.register_script(APPEND_SCRIPT)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisEventLog:
        return cls(connect_redis(url), **options)

    def _key(self, session: str, part: str) -> str:
        return f"{self._prefix}:{{s:{session}}}:{part}"

    def _keys(self, session: str, stream: str) -> list[str]:
        return [
            self._key(session, f"stream:{stream}"),
            self._key(session, f"n:{stream}"),
            self._key(session, f"jobs:{stream}"),
        ]

    async def _add(self, session: str, stream: str, args: list[Any]) -> int:
        await _guarded(self._redis.sadd(self._key(session, "streams"), stream))
        position: int = await _guarded(self._append(keys=self._keys(session, stream), args=args))
        return position

    async def append(self, session: str, stream: str, data: bytes) -> int:
        return await self._add(session, stream, [data, "", ""])

    async def append_job_event(self, session: str, stream: str, job_id: str, sequence: int) -> int:
        return await self._add(session, stream, [b"", job_id, sequence])

    async def read_after(self, session: str, stream: str, position: int) -> list[StoredEvent]:
        entries = await _guarded(
            self._redis.xrange(self._keys(session, stream)[0], f"{max(position, 0) + 1}-0", "+")
        )
        events: list[StoredEvent] = []
        for entry_id, fields in entries:
            at = int(entry_id.split(b"-")[0])
            if b"j" in fields:
                events.append(
                    StoredEvent(at, job_event=JobEventReference(fields[b"j"].decode(), int(fields[b"s"])))
                )
            else:
                events.append(StoredEvent(at, bytes(fields[b"d"])))
        return events

    async def position_of_job_event(
        self, session: str, stream: str, job_id: str, sequence: int
    ) -> int | None:
        found = await _guarded(self._redis.hget(self._keys(session, stream)[2], f"{job_id}:{sequence}"))
        return int(found) if found is not None else None

    async def forget(self, session: str) -> None:
        streams = await _guarded(self._redis.smembers(self._key(session, "streams")))
        keys = [key for stream in streams for key in self._keys(session, stream.decode())]
        await _guarded(self._redis.delete(self._key(session, "streams"), *keys))

    async def forget_stream(self, session: str, stream: str) -> None:
        await _guarded(self._redis.delete(*self._keys(session, stream)))
        await _guarded(self._redis.srem(self._key(session, "streams"), stream))

    async def aclose(self) -> None:
        await self._redis.aclose()


class RedisSessionStore:
    """A `SessionStore` on Redis: each session a hash under `{s:ID}` that `PEXPIRE` ends.

    Loading a session and extending its life is one transaction, so a session that
    expires in between is found by neither or both; Redis forgets the expired ones itself.
    The `requestState` key is one string (`SET NX`: the first replica's wins), and
    messages between replicas go over pub/sub, a hint at most once.
    """

    def __init__(self, client: aioredis.Redis, *, prefix: str = "herald") -> None:
        self._redis = client
        self._prefix = prefix

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisSessionStore:
        return cls(connect_redis(url), **options)

    def _key(self, session_id: str) -> str:
        return f"{self._prefix}:{{s:{session_id}}}:session"

    async def save(self, record: SessionRecord, ttl: float) -> None:
        key = self._key(record.session_id)
        async with self._redis.pipeline(transaction=True) as save:
            save.hset(key, mapping={"record": record.to_json()})
            save.pexpire(key, max(int(ttl * 1000), 1))
            await _guarded(save.execute())

    async def load(self, session_id: str, ttl: float | None) -> SessionRecord | None:
        key = self._key(session_id)
        async with self._redis.pipeline(transaction=True) as load:
            load.hget(key, "record")
            if ttl is not None:
                load.pexpire(key, max(int(ttl * 1000), 1))
            found = (await _guarded(load.execute()))[0]
        return SessionRecord.from_json(session_id, bytes(found)) if found is not None else None

    async def delete(self, session_id: str) -> bool:
        return bool(await _guarded(self._redis.delete(self._key(session_id))))

    async def shared_key(self) -> bytes:
        key = f"{self._prefix}:request-state-key"
        await _guarded(self._redis.set(key, secrets.token_bytes(32), nx=True))
        return bytes(await _guarded(self._redis.get(key)))

    async def publish(self, message: bytes) -> None:
        await _guarded(self._redis.publish(f"{self._prefix}:replicas", message))

    async def follow(self, hear: HearMessage) -> None:
        await follow_channel(self._redis, f"{self._prefix}:replicas", hear)

    async def aclose(self) -> None:
        await self._redis.aclose()
