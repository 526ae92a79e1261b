"""`RedisJobStore`: jobs, their events, results and checkpoints, leases and the job queue.

- A job is two hashes (what started it, written once; its status, rewritten by each
  event), a Stream of its events whose entry ids are the event sequence (`N-0`), a hash
  of its results and a string with its checkpoint.
- Every state change is one script (`scripts`): the record script for the events of a
  job, the create script for a new one.
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
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Final

import orjson

from herald.jobs.events import INPUT_OF_KIND, JobEvent
from herald.jobs.machine import IllegalTransition
from herald.jobs.record import STATUS_FIELDS, JobRecord, epoch_seconds
from herald.jobs.store import Hear, JobChanged, QueueEntry, Subscribed
from herald.stores.errors import JobMissing, StoreError
from herald.stores.group_writer import GroupWriter
from herald.stores.redis.client import StoreRedis, connect_redis, follow_channel, refused_because
from herald.stores.redis.scripts import CREATE_SCRIPT, RECORD_SCRIPT

logger = logging.getLogger("herald.stores")

#: Changes of one job, in order: the job as each event left it, and the event.
Chain = list[tuple[JobRecord, JobEvent]]

#: The consumer group of the workers that read the job queue.
QUEUE_GROUP: Final = "workers"

#: A lease that lapsed this long ago is dropped on the next renewal of any worker.
FORGET_LEASES_AFTER: Final = 3600.0


def _record_outcome(chain: Chain, answer: Any) -> Exception | None:
    """What one record script's answer means for its caller."""
    job = chain[0][0]
    if isinstance(answer, StoreError):
        return answer
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
        self, client: StoreRedis, *, prefix: str = "herald", clock: Callable[[], float] = time.time
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
        if job.trace_context is not None:  # only then: a record without it reads as before
            fixed["trace_context"] = job.trace_context
        meta: list[Any] = []
        for name, value in fixed.items():
            meta += [name, orjson.dumps(value)]
        order = await self._redis.incr(self._index("job-counter"))
        async with self._redis.pipeline(transaction=False) as indexes:
            if job.worker is None and not job.terminal:  # queued: for a worker of its tool
                indexes.xadd(self._queue(job.tool), {"job": job.job_id})
            indexes.zadd(self._index("jobs"), {job.job_id: order})
            if job.owner is not None:
                indexes.zadd(self._index(f"owner:{job.owner}"), {job.job_id: order})
            if not job.terminal:
                indexes.zadd(self._index("unfinished"), {job.job_id: order})
            await indexes.execute()
        keys = [
            self._key(job.job_id, "meta"),
            self._key(job.job_id, "status"),
            self._key(job.job_id, "events"),
        ]
        hint = [self._index("job-events"), f"{job.job_id}|{event.sequence}"]
        attempt = secrets.token_hex(8)
        args = [orjson.dumps(event.to_params()), *hint, attempt, *meta, "|", *_status_pairs(job)]
        if await self._create(keys=keys, args=args) == b"exists":
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
            await self._redis.xadd(self._queue(last.tool), {"job": last.job_id})
        await self._records.write(chain)

    async def _record_batch(self, batch: list[Chain]) -> list[Exception | None]:
        """One pipeline of scripts for the batch (each its own atomic compare-and-set)."""
        answers: list[Any]
        if len(batch) == 1:  # alone: a pipeline would only add to its one round trip
            try:
                answers = [
                    await self._record(keys=self._record_keys(batch[0]), args=self._record_args(batch[0]))
                ]
            except StoreError as refused:
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
                    await indexes.execute()
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
                for index, answer in zip(unsent, await scripts.execute(raise_on_error=False), strict=True):
                    answers[index] = answer
            unsent = [
                index
                for index in unsent
                if isinstance(answers[index], StoreError) and refused_because(answers[index], "NOSCRIPT")
            ]
            if not unsent or attempt:
                break
            await self._redis.script_load(RECORD_SCRIPT)
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
            found = await reads.execute()
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
        entries = await self._redis.entries_after(self._key(job_id, "events"), sequence)
        return [JobEvent.from_params(orjson.loads(fields[b"e"])) for _, fields in entries]

    async def _jobs(self, index: str) -> list[JobRecord]:
        ids = await self._redis.ranked(self._index(index))
        found = await self._get_many([job_id.decode() for job_id in ids]) if ids else []
        return [job for job in found if job is not None]

    async def unfinished(self) -> list[JobRecord]:
        return [job for job in await self._jobs("unfinished") if not job.terminal]

    async def renew_lease(self, worker: str, seconds: float) -> None:
        now = self._clock()
        async with self._redis.pipeline(transaction=False) as leases:
            leases.zadd(self._index("workers"), {worker: now + seconds})
            leases.zremrangebyscore(self._index("workers"), "-inf", now - FORGET_LEASES_AFTER)
            await leases.execute()

    async def release_lease(self, worker: str) -> None:
        await self._redis.zrem(self._index("workers"), worker)

    async def orphaned(self) -> list[JobRecord]:
        live = {
            worker.decode()
            for worker, _ in await self._redis.scored_between(self._index("workers"), self._clock(), "+inf")
        }
        return [job for job in await self.unfinished() if job.worker is None or job.worker not in live]

    async def job_ids(self, owner: str | None = None) -> list[str]:
        index = "jobs" if owner is None else f"owner:{owner}"
        return [job_id.decode() for job_id in await self._redis.ranked(self._index(index))]

    async def save_checkpoint(self, job_id: str, state: bytes) -> None:
        await self._redis.set(self._key(job_id, "checkpoint"), state)

    async def load_checkpoint(self, job_id: str) -> bytes | None:
        return await self._redis.value(self._key(job_id, "checkpoint"))

    async def put_result(self, job_id: str, name: str, mime_type: str, data: bytes) -> None:
        await self._redis.hset(
            self._key(job_id, "results"), mapping={f"m:{name}": mime_type, f"d:{name}": data}
        )

    async def get_result(self, job_id: str, name: str) -> tuple[str, bytes] | None:
        mime_type, data = await self._redis.fields(self._key(job_id, "results"), [f"m:{name}", f"d:{name}"])
        return (mime_type.decode(), data) if mime_type is not None and data is not None else None

    async def prune(self, now: float, retention: float) -> list[str]:
        ended = await self._redis.scored_between(self._index("ended"), "-inf", now)
        gone: list[str] = []
        for raw, ended_at in ended:
            job_id = raw.decode()
            kept = await self._redis.field(self._key(job_id, "meta"), "retain_seconds")
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
                await forget.execute()
            gone.append(job_id)
        return gone

    async def expired(self, job_id: str) -> bool:
        return bool(await self._redis.sismember(self._index("expired"), job_id))

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
            except StoreError as refused:
                if not refused_because(refused, "NOGROUP") or attempt:
                    raise
                logger.warning("the job queue of %s had lost its workers' group; it is made again", tool)
                self._grouped.discard(tool)
        raise AssertionError("unreachable: the second try returns or raises")

    async def _make_queue_group(self, tool: str) -> None:
        """Create the workers' group of a tool's queue, from its start (earlier entries are read)."""
        try:
            await self._redis.xgroup_create(self._queue(tool), QUEUE_GROUP, id="0", mkstream=True)
        except StoreError as refused:
            if not refused_because(refused, "BUSYGROUP"):  # another worker created it first: fine
                raise
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
                await done.execute()

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
        except StoreError:
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
