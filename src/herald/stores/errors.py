"""The one error a store raises, and the boundary where a backend's own errors become it.

A caller cannot act on the difference between `sqlite3.OperationalError` and a redis
`ConnectionError`: either way the store did not do what it was asked. So every store
raises `StoreError` alone, with the backend's exception chained for the log, and the
mapping happens once, at the edge of each backend (`map_exceptions`, as httpcore does),
never scattered through its callers.

Where a request needs the store and it failed, the client hears `StoreUnavailable` (try
again shortly), and the server's log hears of each kind of failure once (`OutageLog`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping

from herald.protocol.errors import HeraldError, ProtocolError


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


class StoreUnavailable(ProtocolError):
    """What a client hears when its request needs the store and the store failed: try again.

    `failed` says what the server could not do ("The server could not start a session").
    The store's own words (a path, a host) stay in the log; the client learns that nothing
    was half-done and that the same request may succeed shortly (HTTP 503, `Retry-After`).
    `request_id` is the request it answers, where there is one.
    """

    code = -32603
    http_status = 503

    def __init__(self, failed: str, *, request_id: int | str | None = None) -> None:
        super().__init__(
            f"{failed}: its storage failed (a full disk, perhaps). "
            "Nothing was changed; send the same request again shortly."
        )
        self.request_id = request_id


class OutageLog:
    """Says that a store refuses once, when it starts, and once more when it works again.

    On a full disk every request meets the same failure; a line per request would bury
    the log (and fill the disk faster where the log lives on it). Each kind of store call
    a server makes (`doing`) gets one of these, around each call (`watching`).
    """

    def __init__(self, logger: logging.Logger, doing: str) -> None:
        self.logger = logger
        self.doing = doing
        self.down = False

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """Note how the call in the block went; a `StoreError` goes on to the caller."""
        try:
            yield
        except StoreError as refused:
            self.failed(refused)
            raise
        self.worked()

    def failed(self, error: StoreError) -> None:
        if not self.down:
            self.down = True
            self.logger.warning("could not %s: %s (said once, until it works again)", self.doing, error)

    def worked(self) -> None:
        if self.down:
            self.down = False
            self.logger.warning("can %s again", self.doing)
