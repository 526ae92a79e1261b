"""The Lua scripts a job's changes and the event log's appends run as, read once at import.

Every state change is one script: it checks the compare-and-set on the sequence, the
transition table (generated from `herald.jobs.machine.TRANSITIONS`), that progress does
not go back, and appends the event and rewrites the status, atomically.

The scripts are the `.lua` files beside this module; what each takes (KEYS, ARGV) and
answers is written at its top. The record script's table of moves is generated, never
copied: `record.lua` has a placeholder line that `transition_table_lua()` fills in.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from herald.jobs.machine import TRANSITIONS, Outcome

#: The line of `record.lua` that the generated table of moves replaces.
MOVES_PLACEHOLDER: Final = "local moves = MOVES"


def transition_table_lua() -> str:
    """The moves `TRANSITIONS` allows, as a Lua table `status|input -> true` (generated, not copied)."""
    moves = sorted(
        f'["{status.value}|{event.value}"] = true'
        for (status, event), (outcome, _) in TRANSITIONS.items()
        if outcome is Outcome.MOVE
    )
    return "{" + ", ".join(moves) + "}"


def _read(name: str) -> str:
    return files(__package__).joinpath(name).read_text(encoding="utf-8")


def _with_moves(script: str) -> str:
    """The record script with the generated table of moves in place of its placeholder."""
    if script.count(MOVES_PLACEHOLDER) != 1:
        raise RuntimeError(f"record.lua must have the line {MOVES_PLACEHOLDER!r} once")
    return script.replace(MOVES_PLACEHOLDER, f"local moves = {transition_table_lua()}")


#: One job's chain of events, written whole or not at all (`record.lua`).
RECORD_SCRIPT: Final = _with_moves(_read("record.lua"))
#: A new job, unless its id is taken by another (`create.lua`).
CREATE_SCRIPT: Final = _read("create.lua")
#: The next position of an event log's stream, and the event at it (`append.lua`).
APPEND_SCRIPT: Final = _read("append.lua")
