"""What one HTTP response has been handed and has not written yet, bounded in frames and bytes.

A stream's pump hands SSE frames to the response that listens, which writes them out as
fast as its client reads. A client that reads slowly, or not at all, must not make the
server hold what it has not read: `UnreadFrames` takes at most `MAX_UNREAD_FRAMES`
frames and `MAX_UNREAD_BYTES` bytes, counting the batch the response is writing until
its write returns. Past either bound the pump waits (back-pressure) and, if the client
reads nothing for a while, cuts it off (`DurableStream`).

One write takes at most `MAX_WRITE_BYTES`: the transport keeps a write the client has not
read, so a larger batch would be held twice, in the buffer and in the transport.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

#: Frames a listener may leave unread. Past this the pump waits for it (back-pressure that
#: reaches producers through `drain`), so a client that reads slowly still gets everything.
MAX_UNREAD_FRAMES = 4096
#: Bytes a listener may leave unread, the batch being written included. A job event's frame
#: is about 400 bytes, so this holds some 650 of them: enough to keep a reading client
#: busy between two of its reads, while a thousand clients that read nothing (the default
#: connection cap) pin at most a quarter of a GiB until they are cut off. The frame bound
#: alone let 4,096 frames, about 0.8 MiB, wait for each.
MAX_UNREAD_BYTES = 256 * 1024
#: The most one write takes from the buffer (a single larger frame goes alone).
MAX_WRITE_BYTES = 64 * 1024


class UnreadFrames:
    """The frames queued for one response, and the batch it is writing; see the module."""

    def __init__(self, max_frames: int = MAX_UNREAD_FRAMES, max_bytes: int = MAX_UNREAD_BYTES) -> None:
        self.max_frames = max_frames
        self.max_bytes = max_bytes
        self._frames: deque[bytes] = deque()
        self._queued_bytes = 0
        #: Bytes of the batch `take` gave out last: the response is writing them.
        self._writing = 0
        #: No frame comes after what is queued: the response ends there.
        self.ended = False
        self._ready = asyncio.Event()  # something to take: a frame, or the end
        self._room = asyncio.Event()  # a waiting `put` may try again

    def __len__(self) -> int:
        return len(self._frames)

    @property
    def buffered_bytes(self) -> int:
        """What the response holds and its client has not read: queued, and being written."""
        return self._queued_bytes + self._writing

    def offer(self, frame: bytes) -> bool:
        """Queue `frame` if it fits; False if not. A frame larger than the byte bound fits an
        empty buffer, alone. An ended buffer takes every frame and drops it: nobody reads it."""
        if self.ended:
            return True
        held = self.buffered_bytes
        if len(self._frames) >= self.max_frames or (held and held + len(frame) > self.max_bytes):
            return False
        self._frames.append(frame)
        self._queued_bytes += len(frame)
        self._ready.set()
        return True

    async def put(self, frame: bytes) -> None:
        """Queue `frame` once it fits (the caller bounds the wait)."""
        while not self.offer(frame):
            self._room.clear()
            await self._room.wait()

    async def take(self) -> bytes:
        """The next batch to write: queued frames joined, up to `MAX_WRITE_BYTES` (one frame at
        least), once there are some; b"" once the buffer has ended and is empty. Taking says
        the batch taken before is written: it counts no more."""
        if self._writing:
            self._writing = 0
            self._room.set()
        while not self._frames:
            if self.ended:
                return b""
            self._ready.clear()
            await self._ready.wait()
        batch = [self._frames.popleft()]
        size = len(batch[0])
        while self._frames and size + len(self._frames[0]) <= MAX_WRITE_BYTES:
            frame = self._frames.popleft()
            batch.append(frame)
            size += len(frame)
        self._queued_bytes -= size
        self._writing = size
        return b"".join(batch)

    def end(self) -> None:
        """End the response after what is queued."""
        self.ended = True
        self._ready.set()
        self._room.set()

    @property
    def pending(self) -> int:
        """Frames queued and not yet taken by the response."""
        return len(self._frames)

    def cut(self) -> bytes | None:
        """End the response now, dropping what is queued; returns the first frame dropped."""
        first = self._frames[0] if self._frames else None
        self._frames.clear()
        self._queued_bytes = 0
        self.end()
        return first

    def keep(self, wanted: Callable[[bytes], bool]) -> None:
        """Drop the queued frames that are not `wanted` (ones a replay has sent already)."""
        self._frames = deque(frame for frame in self._frames if wanted(frame))
        self._queued_bytes = sum(len(frame) for frame in self._frames)
