"""Count the Python calls a piece of code makes into some modules: work, not time.

A cost that must not grow with something idle (listens, waiters) is asserted on the
number of calls, which the machine's load cannot change.
"""

from __future__ import annotations

import collections
import contextlib
import sys
from collections.abc import Iterator
from types import FrameType, ModuleType
from typing import Any


@contextlib.contextmanager
def calls_into(*modules: ModuleType) -> Iterator[collections.Counter[str]]:
    """Within the block, count each call of a function (or resumption of a coroutine) defined
    in `modules`, by qualified name."""
    files = {module.__file__ for module in modules}
    counted: collections.Counter[str] = collections.Counter()

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if event == "call" and frame.f_code.co_filename in files:
            counted[frame.f_code.co_qualname] += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield counted
    finally:
        sys.setprofile(previous)
