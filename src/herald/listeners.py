"""A set of callbacks that can be told something, each removable by the function `add` returns.

Connections, subscription streams and job followers come and go by the thousand, so
removal is by key (constant time), and telling iterates over a snapshot so a callback
may remove itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, ParamSpec

P = ParamSpec("P")


class Listeners(Generic[P]):
    def __init__(self) -> None:
        self._by_key: dict[int, Callable[P, None]] = {}

    def add(self, listener: Callable[P, None]) -> Callable[[], None]:
        """Start telling `listener`; returns the function that stops it."""
        key = id(listener)
        self._by_key[key] = listener

        def remove() -> None:
            self._by_key.pop(key, None)

        return remove

    def tell(self, *args: P.args, **kwargs: P.kwargs) -> None:
        for listener in list(self._by_key.values()):
            listener(*args, **kwargs)

    def __len__(self) -> int:
        return len(self._by_key)
