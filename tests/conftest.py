"""Test-run order: the files that hold a worker longest are handed out first.

`make unit` shares files out among pytest-xdist workers, a whole file to one, in collection
order (`--no-loadscope-reorder`). A file of minutes that starts last keeps the run going
alone after the others are done; started first, it runs beside everything else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

TESTS = Path(__file__).parent

#: The files that take a worker a minute or more, longest first (see `--durations`).
LONGEST_FIRST: Final = (
    "widget/test_mcp_apps_host_outage.py",
    "jobs/test_shutdown.py",
    "e2e/test_balanced.py",
    "giftgenius/test_two_servers.py",
    "giftgenius/test_cli_remote.py",
    "widget/test_mcp_apps_host_jobs.py",
    "giftgenius/bulk/test_pipeline.py",
    "jobs/test_redis_restart.py",
    "lint/test_lint_properties.py",
    "transports/http/test_stalled_listens.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {TESTS / name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path, len(rank)))  # stable: the rest keep their order
