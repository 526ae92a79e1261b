"""A map that forgets its oldest entries: the linter's memory stays the same size however long the log.

What the linter remembers across messages (ids a session used, event ids, ended jobs)
would grow with the log; each such memory is a `Recent`, which `trim()` cuts back to its
newest `capacity` entries once it has grown to twice that, so a log of a billion
messages is read in the memory of a log of a million. A rule that depends on something
forgotten stays silent rather than guess: the capacities are far above what one
conversation keeps in flight, so only repeats across very long distances go unseen.

Trimming in bulk, rather than dropping the oldest entry at every insert, keeps the hot
path on the dict's own C methods; and a dict whose first entry is deleted again and
again leaves a run of holes that every later look for the first entry walks over.
"""

from __future__ import annotations

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Recent(dict[K, V]):
    """A dict that `trim()` cuts back to its newest `capacity` entries (it holds at most twice that)."""

    __slots__ = ("capacity",)

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity

    def trim(self) -> None:
        if len(self) > 2 * self.capacity:
            newest = list(self.items())[-self.capacity :]
            self.clear()
            self.update(newest)
