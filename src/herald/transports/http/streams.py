"""SSE streams of the Streamable HTTP transport, durable through the event log.

A `ResponseStream` is the outbox of one POST. Until its first message it has not
decided how to answer: when that message is the whole reply, the POST is answered with
plain JSON; otherwise it becomes an SSE stream. Every SSE event is appended to the event
log before anyone sees it, by a pump task that runs whether or not a client is
listening, so a client that drops the connection (or is told to go away, SEP-1699)
resumes with `Last-Event-ID` and misses nothing. The standalone GET stream of a session
works the same way for server-initiated messages. An event the log refuses (a full disk)
still goes out, without an id: the stream goes on, and only a resumption misses it.

A job event is not stored here again: the log keeps a reference to it, in the stream's
order, and the frame is rendered from the event (`job_frames`), with the event's own id.
Other events are stored as their bytes, with the id `stream.position`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, ClassVar

import herald.telemetry
from herald.jobs.events import JobEvent
from herald.protocol.codec import Outgoing, encode
from herald.protocol.messages import ErrorResponse, RequestId, Response
from herald.protocol.sse import encode_event
from herald.server.outbox import Outbox
from herald.stores.errors import OutageLog, StoreError
from herald.stores.eventlog import EventLog, StoredEvent
from herald.transports.http.job_frames import JobEvents, JobFrame, job_event_frame, read_job_events
from herald.transports.http.unread import UnreadFrames

logger = logging.getLogger("herald.http")

#: Stream name of a session's standalone GET stream; POST streams get random names.
STANDALONE = "g"
#: Producers (progress, logs) wait for the pump once this many messages are queued.
HIGH_WATER = 1024
#: The same for a stream without a log (2026-07-28), which cuts off a listener it waits for
#: once twice this many are queued: producers that cannot wait (a listen's live job
#: events) would queue without bound, and only memory could hold them. A queued job event
#: for a listen is about 700 bytes of objects, so this keeps a few hundred KiB per stream.
UNLOGGED_HIGH_WATER = 256
#: How long the pump waits for a listener that reads nothing before it cuts it off (what a
#: listener may leave unread is bounded in `herald.transports.http.unread`). Everything is
#: in the log, so the client resumes with `Last-Event-ID` and loses nothing, while the
#: server's memory stays bounded whatever the client does.
STALLED_LISTENER_SECONDS = 10.0
#: Whether the event log takes writes, said once when it stops (a full disk) and once when
#: it takes them again; one for the process, as a process has one event log.
LOGGING = OutageLog(logger, "write the SSE event log")


class _Marker:
    """Queued among the messages: end the live response here."""


class _RequestEnded:
    """Queued among the messages: a request of this stream ended without a reply (cancelled)."""

    def __init__(self, request_id: RequestId) -> None:
        self.request_id = request_id


class _JobEventToSend:
    """Queued among the messages: a job's events up to `sequence`, logged by reference.

    `event` is the last of them when it is in hand (a live event); the pump reads from the
    job store whatever the stream has not logged yet before it (a catch-up).
    """

    __slots__ = ("event", "job_id", "progress_token", "sequence")

    def __init__(
        self, job_id: str, sequence: int, progress_token: str | int | None, event: JobEvent | None = None
    ) -> None:
        self.job_id = job_id
        self.sequence = sequence
        self.progress_token = progress_token
        self.event = event


class NoReply:
    """What a POST resolves to when all its requests ended without a word."""


NO_REPLY = NoReply()


#: How a stream starts its pump: the `create_task` of its owner's task group, or a wrapper of it.
Spawn = Callable[[Coroutine[Any, Any, None]], "asyncio.Task[None]"]


def event_id(stream: str, position: int) -> str:
    return f"{stream}.{position}"


def parse_event_id(value: str) -> tuple[str, int] | None:
    """The stream and position of an id `stream.position` (a job event id is not one)."""
    stream, _, position = value.rpartition(".")
    if not stream or ":" in stream or not position.isdigit():
        return None
    return stream, int(position)


async def resume_point(log: EventLog, session: str, value: str) -> tuple[str, int] | None:
    """The stream and position a `Last-Event-ID` names in this session, or None if none.

    `stream.position` names both. A job event id (`jobId:sequence`) names an event of the
    session's standalone stream, where job events go: the log says at which position.
    """
    job_id, colon, sequence = value.rpartition(":")
    if not colon:
        return parse_event_id(value)
    if not job_id or not sequence.isdigit():
        return None
    position = await log.position_of_job_event(session, STANDALONE, job_id, int(sequence))
    return (STANDALONE, position) if position is not None else None


async def stored_frames(stored: list[StoredEvent], stream: str, jobs: JobEvents | None) -> bytes:
    """The SSE frames of events read from the log, in order; job events come from the job store."""
    events = await read_job_events([item.job_event for item in stored if item.job_event], jobs)
    frames: list[bytes] = []
    for item in stored:
        if item.job_event is None:
            frames.append(encode_event(item.data, event_id=event_id(stream, item.position)))
        elif (found := events.get(item.job_event)) is not None:
            frames.append(job_event_frame(*found, item.position))
        else:  # not in the job store (or no store to ask): there is nothing to say
            logger.warning("job event %s is not in the job store; not replayed", item.job_event.event_id)
    return b"".join(frames)


class DurableStream(Outbox):
    """Messages in, persisted SSE frames out to whoever is attached right now.

    This is a POST's kind (`ResponseStream`): what it is sent before its pump starts is
    kept for it, since the first message decides between a JSON and an SSE answer. The
    session's GET stream is its sibling `StandaloneStream`.
    """

    #: Whether what is sent before the pump starts is kept for it (or dropped).
    holds_until_started: ClassVar[bool] = True

    def __init__(
        self,
        log: EventLog | None,
        session: str,
        name: str,
        *,
        spawn: Spawn,
        jobs: JobEvents | None = None,
    ) -> None:
        #: With no log (2026-07-28 streams, which cannot be resumed) nothing is stored.
        #: The last sequence of each job this stream logged: a job event is logged once, and
        #: a gap before it is filled from the job store, in order.
        self._logged: dict[str, int] = {}
        #: Starts the pump in the task group of whoever owns the stream (its session or exchange).
        self._spawn = spawn
        self.log = log
        #: The job store, which a replay renders the stream's job events from.
        self.jobs = jobs
        self.session = session
        self.name = name
        self.position = 0
        #: The last position handed to a listener: a new listener starts after it, so what
        #: was stored while nobody listened is not lost.
        self.delivered = 0
        self._incoming: asyncio.Queue[Outgoing | _JobEventToSend | _Marker | _RequestEnded | None] = (
            asyncio.Queue()
        )
        self._listener: UnreadFrames | None = None
        #: The listener the pump waits for room in, while it does.
        self._waiting_for: UnreadFrames | None = None
        self._pump: asyncio.Task[None] | None = None
        self.finished = asyncio.Event()
        self._room = asyncio.Event()  # set when a waiting producer may queue more
        self.on_finished: Callable[[], None] | None = None
        #: Told when a listener is cut off for reading nothing (see `_wait_for_room`).
        self.on_cut: Callable[[], None] | None = None
        self.high_water = HIGH_WATER if log is not None else UNLOGGED_HIGH_WATER
        self.stall_seconds = STALLED_LISTENER_SECONDS

    # -- outbox ----------------------------------------------------------------------------------

    def keeps_what_is_sent(self) -> bool:
        """Whether a message sent now is kept (stored and relayed); always, for a POST's stream."""
        return True

    def send(self, message: Outgoing) -> None:
        if not self.keeps_what_is_sent():
            return
        if self._pump is not None or self.holds_until_started:
            self._queue(message)

    def send_job_event(self, event: JobEvent, progress_token: str | int | None) -> None:
        """Send a job event: its place is logged by reference, its frame rendered as it goes out.

        The stream starts pumping if it has not: a session's job events are kept for it
        even before a client listens (where replicas share the session, the next listener
        catches up on them instead).
        """
        if not self.keeps_what_is_sent():
            return
        self.start()
        self._queue(_JobEventToSend(event.job_id, event.sequence, progress_token, event))

    async def drain(self) -> None:
        """Wait while over `high_water` messages are queued, even before the pump has started:
        a POST's pump starts once its first message has made it a stream, and a producer that
        runs ahead meanwhile (a listen's history, say) must not queue all it has."""
        if self._incoming.qsize() > self.high_water and not self.finished.is_set():
            self._room.clear()
            await self._room.wait()

    def _queue(self, message: Outgoing | _JobEventToSend) -> None:
        """Queue a message for the pump; cut off a listener it waits for if they pile up.

        Producers that wait for `drain` never queue more than `high_water`; those that
        cannot wait (job events for a listen, list changes) would queue without bound
        while the pump waits for a listener that reads too slowly or not at all. A stream
        with a log holds job events as small references and logs the rest once the
        listener is cut; a stream without one would hold them all, so it cuts the listener
        once they are twice `high_water`.
        """
        if self.finished.is_set():
            return  # nothing reads the queue any more
        self._incoming.put_nowait(message)
        waited_for = self._waiting_for
        if waited_for is not None and self.log is None and self._incoming.qsize() > 2 * self.high_water:
            self._cut(waited_for)

    # -- pumping ----------------------------------------------------------------------------------

    def start(self) -> None:
        if self._pump is None:
            self._pump = self._spawn(self._run())

    async def _run(self) -> None:
        try:
            while (message := await self._incoming.get()) is not None:
                if self._incoming.qsize() <= self.high_water // 2:
                    self._room.set()
                if isinstance(message, _Marker):
                    self.detach()
                    continue
                if isinstance(message, _RequestEnded):
                    if self.ended_without_reply(message.request_id):
                        break
                    continue
                if isinstance(message, _JobEventToSend):
                    await self._pump_job_event(message)
                    continue
                data = encode(message)
                logged = await self._append(data)
                if (listener := self._listener) is not None:
                    frame_id = event_id(self.name, self.position) if logged else None
                    frame = encode_event(data, event_id=frame_id)
                    if not self._hand_over(listener, frame):
                        await self._wait_for_room(listener, frame)
                if self.is_last(message):
                    break
        finally:
            self._room.set()
            self.finished.set()
            self.detach()
            if self.on_finished is not None:
                self.on_finished()

    async def _pump_job_event(self, message: _JobEventToSend) -> None:
        """Log the events' places (references: the events are in the job store) and relay them.

        An event this stream logged already is skipped; one that follows a gap (events
        written while nobody listened here) is preceded by the gap, read from the job store.
        """
        logged = self._logged.get(message.job_id, 0)
        if message.sequence <= logged:
            return
        if message.event is not None and message.event.sequence == logged + 1:
            events = [message.event]
        elif self.jobs is not None:
            found = await self.jobs().events_after(message.job_id, logged)
            events = [event for event in found if event.sequence <= message.sequence]
        else:
            events = [message.event] if message.event is not None else []
        for event in events:
            self._logged[message.job_id] = event.sequence
            if self.log is None:
                self.position += 1
            else:
                # One the log refused goes out live all the same, under its own id.
                with contextlib.suppress(StoreError), LOGGING.watching():
                    self.position = await self.log.append_job_event(
                        self.session, self.name, event.job_id, event.sequence
                    )
            if (listener := self._listener) is not None:
                frame = job_event_frame(event, message.progress_token, self.position)
                if not self._hand_over(listener, frame):
                    await self._wait_for_room(listener, frame)

    async def _append(self, data: bytes) -> bool:
        """Log one event, which moves `position` on; False if the log refused it (a full disk).

        An event the log refused still goes out to the listener, without an id: a client
        that resumes the stream later cannot get it again, but the stream goes on.
        """
        if self.log is None:
            self.position += 1
            return True
        try:
            with LOGGING.watching():
                self.position = await self.log.append(self.session, self.name, data)
        except StoreError:
            return False
        return True

    def _hand_over(self, listener: UnreadFrames, frame: bytes) -> bool:
        """Queue the frame for the listener if it has room (the usual case, kept free of awaits)."""
        if not listener.offer(frame):
            return False
        self.delivered = self.position
        return True

    async def _wait_for_room(self, listener: UnreadFrames, frame: bytes) -> None:
        """The listener is behind: wait for it (back-pressure), or cut it off if it stalls."""
        self._waiting_for = listener
        try:
            async with asyncio.timeout(self.stall_seconds):
                await listener.put(frame)
        except TimeoutError:
            self._cut(listener)  # it stopped reading: it resumes from the log, or listens again
            return
        finally:
            self._waiting_for = None
        if listener is self._listener:
            self.delivered = self.position

    def _cut(self, listener: UnreadFrames) -> None:
        """End a listener that reads nothing, dropping what it has not taken: its client
        resumes after the last event it read, so the frames dropped count as not delivered."""
        if listener is not self._listener:
            return
        self._listener = None
        if (telemetry := herald.telemetry.active) is not None:
            telemetry.pressed("cut")
            telemetry.pressed("dropped", listener.pending)
        first_dropped = listener.cut()
        if first_dropped is not None:
            self.delivered = max(0, min(self.delivered, _frame_position(first_dropped) - 1))
        if self.on_cut is not None:
            self.on_cut()

    def is_last(self, message: Outgoing) -> bool:
        """Whether the stream ends after this message (a POST stream ends with its replies)."""
        return False

    def ended_without_reply(self, request_id: RequestId) -> bool:
        """A request of this stream was cancelled; whether the stream has nothing left to say."""
        return False

    async def aclose(self) -> None:
        """Stop pumping (the session ended)."""
        self._incoming.put_nowait(None)
        if self._pump is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump

    # -- listening ----------------------------------------------------------------------------------

    def stream_closer(self) -> Callable[[], None]:
        return self.close_stream

    def close_stream(self) -> None:
        """End the live HTTP response after what was sent so far (SEP-1699).

        The marker travels in order with the messages, so everything sent before the call
        still goes out live; what follows is stored for the client to resume.
        """
        self._incoming.put_nowait(_Marker())

    def detach(self, listener: UnreadFrames | None = None) -> None:
        """End the live HTTP response now (the client left, or a newer one replaced it).

        With `listener`, only if that one is still the stream's: a client that leaves must
        not end the response of the client that resumed the stream after it.
        """
        if self._listener is not None and (listener is None or listener is self._listener):
            self._listener.end()
            self._listener = None

    def listen(self) -> UnreadFrames:
        """Become the stream's listener (a newer connection replaces an older one)."""
        self.detach()
        live = UnreadFrames()
        self._listener = live
        return live

    @property
    def listening(self) -> bool:
        return self._listener is not None

    async def frames(
        self, live: UnreadFrames, after: int | None, keepalive: float
    ) -> AsyncIterator[bytes | None]:
        """SSE frames for one HTTP response: the stored ones after `after`, then live ones.

        `live` comes from `listen()`, called before anything could be pumped past it.
        Yields None when `keepalive` seconds pass without a frame, so the caller can send
        a comment. Ends when the stream finishes or is closed, or another listener takes over.
        """
        if after is not None and self.log is not None:
            stored = await self.log.read_after(self.session, self.name, after)
            if stored and (replayed := await stored_frames(stored, self.name, self.jobs)):
                yield replayed
            # Frames pumped while we read the log are both stored and queued: skip the repeats.
            replayed_through = stored[-1].position if stored else after
            live.keep(lambda frame: _frame_position(frame) > replayed_through)
        if self.finished.is_set() and not live:
            return
        # What is queued goes out in one write (up to a bound): one send per burst, not per event.
        while True:
            try:
                async with asyncio.timeout(keepalive):
                    batch = await live.take()
            except TimeoutError:
                yield None
                continue
            if not batch:  # the listener has ended
                return
            yield batch


def _frame_position(frame: bytes) -> int:
    if isinstance(frame, JobFrame):  # its id is the job event's, not `name.position`
        return frame.position
    first_line = frame.split(b"\n", 1)[0]
    parsed = parse_event_id(first_line.removeprefix(b"id: ").decode())
    return parsed[1] if parsed else 0


class StandaloneStream(DurableStream):
    """A session's GET stream: server-initiated messages and the session's job events.

    What it is sent before anyone ever listened is dropped (server-initiated messages are
    advisory, and a session that never opened its GET stream should not grow a log),
    except job events, which start its pump and are logged for the first listener. Where
    replicas share the session (`shared`), only the replica a client listens on records,
    so two replicas never log one event twice; what happens while nobody listens here is
    then not kept, except job events, which the next listener catches up on from the job
    store (`attach`).
    """

    holds_until_started = False

    def __init__(
        self, log: EventLog, session: str, *, spawn: Spawn, jobs: JobEvents, shared: bool = False
    ) -> None:
        super().__init__(log, session, STANDALONE, spawn=spawn, jobs=jobs)
        self.shared = shared

    def keeps_what_is_sent(self) -> bool:
        return not self.shared or self._listener is not None

    async def attach(self, after: int | None, owner: str) -> tuple[UnreadFrames, int]:
        """A new listener, and the position its replay starts after (`after`, or else after
        what earlier listeners were handed).

        What other replicas logged on this stream is read first, so a live job event finds
        the stream knowing what it holds; the listener attaches with no await between
        taking the replay point and attaching (from then on the pump hands it frames); then
        what `owner`'s jobs said while nobody listened here is queued after the log.
        """
        await self.read_what_others_logged()
        start = self.delivered if after is None else after
        live = self.listen()
        self.start()
        await self.catch_up(owner)
        return live, start

    async def read_what_others_logged(self) -> None:
        """Take in what other replicas logged on this stream since this one last did.

        Called before a listener attaches: from then on a live job event finds the stream
        knowing what it holds, and is not logged again. What was read does not count as
        delivered: the replica that logged it may have had no listener (a session's job
        events are logged before any GET opens), so a listener here starts after what this
        replica delivered, and a client that moved from another replica without naming its
        last id may see events again, which it drops by their ids (at least once).
        """
        if self.log is None:
            return
        elsewhere = await self.log.read_after(self.session, self.name, self.position)
        for item in elsewhere:
            if (reference := item.job_event) is not None:
                last = self._logged.get(reference.job_id, 0)
                self._logged[reference.job_id] = max(last, reference.sequence)
        if elsewhere:
            self.position = max(self.position, elsewhere[-1].position)

    async def catch_up(self, owner: str) -> None:
        """Queue every event of `owner`'s jobs that this stream has not logged, in order.

        A listener that opens the stream gets, after what the log holds, what happened
        while nobody listened here: the events a worker or another replica wrote to the
        job store meanwhile. The pump logs each once (`read_what_others_logged` first).
        """
        if self.jobs is None or self.log is None:
            return
        source = self.jobs()
        for job_id in await source.job_ids(owner):
            job = await source.get(job_id)
            if job is not None and job.sequence > self._logged.get(job_id, 0):
                self.start()
                self._incoming.put_nowait(_JobEventToSend(job_id, job.sequence, job.progress_token))


class ResponseStream(DurableStream):
    """The outbox of one POST: JSON when the reply is all there is, SSE otherwise."""

    def __init__(
        self, log: EventLog | None, session: str, expected: set[RequestId | None], *, spawn: Spawn
    ) -> None:
        super().__init__(log, session, secrets.token_hex(6), spawn=spawn)
        self.expected = set(expected)
        #: Resolves with the first message sent: it decides between a JSON and an SSE answer
        #: (or with NO_REPLY when every request ended without one).
        self.first: asyncio.Future[Outgoing | NoReply] = asyncio.get_running_loop().create_future()

    def send(self, message: Outgoing) -> None:
        if not self.first.done():
            self.first.set_result(message)
        super().send(message)

    def request_ended(self, request_id: RequestId) -> None:
        """A request of this POST ended without a reply (the client cancelled it, or left).

        JSON-RPC sends nothing for a cancelled request, but an HTTP exchange must end: once
        every request of the POST has ended one way or another, so does its response.
        """
        if not self.first.done():
            self.expected.discard(request_id)
            if not self.expected:
                self.first.set_result(NO_REPLY)
            return
        self._incoming.put_nowait(_RequestEnded(request_id))

    def ended_without_reply(self, request_id: RequestId) -> bool:
        self.expected.discard(request_id)
        return not self.expected

    def answers_everything(self, message: Outgoing | NoReply) -> bool:
        """Whether this one message replies to every request of the POST."""
        if isinstance(message, NoReply):
            return False
        if isinstance(message, tuple):
            return {
                reply.id for reply in message if isinstance(reply, Response | ErrorResponse)
            } >= self.expected
        return isinstance(message, Response | ErrorResponse) and {message.id} >= self.expected

    def start_sse(self) -> None:
        """Answer as a stream after all: the pump persists and relays everything sent so far, and on."""
        self.start()

    def is_last(self, message: Outgoing) -> bool:
        replies = message if isinstance(message, tuple) else (message,)
        for reply in replies:
            if isinstance(reply, Response | ErrorResponse):
                self.expected.discard(reply.id)
        return not self.expected
