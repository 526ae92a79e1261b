"""The `giftgenius` command run as a person runs it, for the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GIFTGENIUS = [sys.executable, "-m", "giftgenius"]
#: Wide columns, so that rich does not wrap the words a test looks for, and no colours.
WIDE = {**os.environ, "COLUMNS": "300", "NO_COLOR": "1"}


def run(*argv: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The command's outcome, once it has ended by itself."""
    return subprocess.run(
        [*GIFTGENIUS, *argv], capture_output=True, text=True, timeout=timeout, check=False, env=WIDE, cwd=cwd
    )
