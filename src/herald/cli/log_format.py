"""`--log-format text|json`, as `herald run`, `giftgenius serve` and `giftgenius worker` take it."""

from __future__ import annotations

import enum
import logging
from typing import Annotated

import typer


class LogFormatChoice(enum.StrEnum):
    text = "text"
    json = "json"


#: The option itself, as each of those commands declares it.
LogFormatOption = Annotated[
    LogFormatChoice,
    typer.Option(help="text for a terminal, or json: one object a line, for a log collector."),
]


def use_log_format(choice: LogFormatChoice) -> None:
    """JSON lines on stderr from INFO up, when asked; text stays as the process had it."""
    if choice is LogFormatChoice.json:
        from herald.logs import configure

        configure("json", logging.INFO)
