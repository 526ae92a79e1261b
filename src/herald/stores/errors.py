"""The one error a store raises, and the boundary where a backend's own errors become it.

A caller cannot act on the difference between `sqlite3.OperationalError` and a redis
`ConnectionError`: either way the store did not do what it was asked. So every store
raises `StoreError` alone, with the backend's exception chained for the log, and the
mapping happens once, at the edge of each backend (`map_exceptions`, as httpcore does),
never scattered through its callers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from herald.protocol.errors import HeraldError


class StoreError(HeraldError):
    """A store could not read or write (disk full, file locked, schema it cannot read, ...).

    Whatever was being written was not written: a store's writes are all-or-nothing.
    """


class JobMissing(StoreError):
    """The store holds no job to record an event of: it was never created there, or the store
    lost it (a Redis that came back empty). Trying again cannot help, so a runner stops
    writing for that job instead of retrying as it does after other refusals."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"no job {job_id!r} to record an event of: the store does not hold it")
        self.job_id = job_id


@contextlib.contextmanager
def map_exceptions(mapping: Mapping[type[Exception], type[Exception]]) -> Iterator[None]:
    """Re-raise an exception of a key's class as the class it maps to, the original chained."""
    try:
        yield
    except Exception as exc:
        for foreign, ours in mapping.items():
            if isinstance(exc, foreign):
                raise ours(str(exc)) from exc
        raise
