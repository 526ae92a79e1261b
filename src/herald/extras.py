"""Optional parts of herald, installed as extras, and the one line that names a missing one.

`pip install herald` is the runtime alone: enough to serve stdio and Streamable HTTP.
The rest comes with extras (`herald[redis]`, `herald[auth]`, `herald[cli]`,
`herald[client]`, `herald[record]`, `herald[otel]`, or `herald[all]`), and where code needs one that is
not installed, `needs` turns the `ModuleNotFoundError` into `MissingExtra`, whose message
says which extra to install and for what, instead of a traceback about a module a user
never asked for by name.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from herald.protocol.errors import HeraldError

__all__ = ["EXTRAS", "MissingExtra", "needs"]

#: Each extra and the top-level modules it installs (what a `ModuleNotFoundError` names).
EXTRAS: dict[str, frozenset[str]] = {
    "client": frozenset({"httpx"}),
    "auth": frozenset({"jwt", "httpx"}),
    "redis": frozenset({"redis"}),
    "cli": frozenset({"typer", "rich", "httpx"}),
    "record": frozenset({"aiohttp"}),
    "otel": frozenset({"opentelemetry", "prometheus_client"}),
}


class MissingExtra(HeraldError, ImportError):
    """What was asked for needs an extra that is not installed."""

    def __init__(self, extra: str, what: str, module: str) -> None:
        super().__init__(
            f"{what} needs herald[{extra}] (no module {module!r}): pip install 'herald[{extra}]'"
        )
        self.extra = extra


@contextlib.contextmanager
def needs(extra: str, what: str) -> Iterator[None]:
    """Turn the import of a module of `extra` that fails into `MissingExtra` saying `what` needs it."""
    try:
        yield
    except ModuleNotFoundError as missing:
        module = (missing.name or "").partition(".")[0]
        if module not in EXTRAS[extra]:
            raise
        raise MissingExtra(extra, what, module) from None
