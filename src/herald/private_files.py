"""Files only their owner may read.

The job store and the message logs hold what people sent: names, departments, interests,
whole tool calls. On a machine shared with other users they must not be readable by the
others, whatever the umask. Files are created with mode 0600; a file that exists already
keeps the mode its owner gave it.
"""

from __future__ import annotations

import contextlib
import os
from typing import Final

PRIVATE_MODE: Final = 0o600


def private_opener(path: str, flags: int) -> int:
    """An `opener` for `open()` that creates the file readable and writable by its owner alone."""
    return os.open(path, flags, PRIVATE_MODE)


def ensure_private_file(path: str | os.PathLike[str]) -> None:
    """Create `path` (empty, mode 0600) unless it exists, so whatever fills it later inherits the mode.

    SQLite creates its `-wal` and `-shm` files with the mode of the database file.
    """
    with contextlib.suppress(FileExistsError):
        os.close(private_opener(os.fspath(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL))
