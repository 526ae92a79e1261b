"""Sets of callbacks that can be told something, each removable by the function `add` returns.

Connections, subscription streams and job followers come and go by the thousand, so
removal is by key (constant time), and telling iterates over a snapshot so a callback
may remove itself. `ListenersByKey` files them under what they follow (a job's owner, a
job id), so telling one key costs its own listeners only, however many follow others.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
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


class ListenersByKey(Generic[P]):
    """Listeners filed under the key they follow; telling a key tells only its own.

    A key nobody follows any more is forgotten, so the index holds only what is followed.
    """

    def __init__(self) -> None:
        self._by_key: dict[Hashable, Listeners[P]] = {}

    def add(self, key: Hashable, listener: Callable[P, None]) -> Callable[[], None]:
        """Tell `listener` what is said under `key`; returns the function that stops it."""
        listeners = self._by_key.setdefault(key, Listeners())
        remove = listeners.add(listener)

        def unsubscribe() -> None:
            remove()
            if not listeners and self._by_key.get(key) is listeners:
                del self._by_key[key]

        return unsubscribe

    def tell(self, key: Hashable, *args: P.args, **kwargs: P.kwargs) -> None:
        listeners = self._by_key.get(key)
        if listeners is not None:
            listeners.tell(*args, **kwargs)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._by_key
