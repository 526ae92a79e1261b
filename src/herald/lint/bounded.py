"""A map that forgets its oldest entries: the linter's memory stays the same size however long the log.

What the linter remembers across messages (ids a session used, event ids, ended jobs)
would grow with the log; each such memory is a `Recent` with a capacity, so a log of a
billion messages is read in the memory of a log of a million. A rule that depends on
something forgotten stays silent rather than guess: the capacities are far above what
one conversation keeps in flight, so only repeats across very long distances go unseen.
"""

from __future__ import annotations

from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Recent(dict[K, V], Generic[K, V]):
    """A dict of at most `capacity` entries; adding past it forgets the oldest added."""

    __slots__ = ("capacity",)

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity

    def __setitem__(self, key: K, value: V) -> None:
        super().__setitem__(key, value)
        if len(self) > self.capacity:
            del self[next(iter(self))]
