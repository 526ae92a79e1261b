"""The bulk job's view in an MCP Apps host when its server dies mid-job and comes back.

Apart from the other host tests because it is the longest: the rest of a big analysis runs
after the restart, in a server measured for coverage.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.widget.support import (
    Console,
    HostPage,
    StaticServer,
    assert_clean,
    employees_csv,
    gift_server,
    non_decreasing,
    polls,
    start_job,
)

pytestmark = pytest.mark.slow  # a real browser (chromium) and the test host

#: Long enough to outlast a server's restart (about 4 s; minutes under coverage on a busy machine).
RESTART_PEOPLE = 40_000


def test_lost_server_is_said_and_the_view_goes_on_from_its_cursor_when_it_returns(
    page: Page, console: Console, static: StaticServer, tmp_path: Path
) -> None:
    """The server dies mid-job (its own, so the others keep theirs) and comes back.

    Same port, same SQLite store: once the dead process's lease has lapsed, the new one
    takes its bulk job over and finishes it from its last checkpoint (the analysis is
    resumable), and serves the old session, which lives in the store too. The view says the
    server is unreachable and backs off; the view polls on from the cursor it had and shows
    the job completing, and the bar never went back.
    """
    with gift_server(tmp_path, measured=False) as first:
        host = HostPage(page, console, static, first)
        job_id, _ = start_job(host, employees_csv(RESTART_PEOPLE))
        job = host.frame.locator("section.job")
        expect(job).to_have_attribute("data-status", "running")
        connection = job.locator(".connection")
        expect(connection).to_be_empty()
        bar = job.locator("[role=progressbar]")
        expect(bar).not_to_have_attribute("aria-valuenow", "0")  # so that a bar going back would show
        first.process.kill()
        first.process.wait(timeout=10)
        shown = float(bar.get_attribute("aria-valuenow") or "nan")

        expect(connection).to_have_text(re.compile(r"^Server unreachable — retrying in \d+ s$"))
        # Two failed polls in a row: the view keeps trying, and the job is still running to it.
        host.page.wait_for_function(
            "() => testHost.calls.filter((c) => c.name === 'get_job_status' && c.error).length >= 2"
        )
        expect(job).to_have_attribute("data-status", "running")

        with gift_server(tmp_path, port=first.port, measured=False) as second:
            assert second.store == first.store
            # The whole rest of the analysis runs first (traced, under coverage): a long bound.
            expect(job).to_have_attribute("data-status", "completed", timeout=240_000)
            expect(connection).to_be_empty()
            ending = second.job_status(job_id)

    assert ending["status"] == "completed", ending.get("error")
    kinds = [event["type"] for event in ending["events"]]
    assert "job.failed" not in kinds
    assert kinds.count("job.completed") == 1
    stages = [event.get("stage") for event in ending["events"]]
    assert "resumed after its worker stopped" in stages, "the restarted server took the job over"
    expect(job.locator(".job-error")).to_be_hidden()

    calls = polls(host)
    first_failure = next(i for i, call in enumerate(calls) if "error" in call)
    recovered = next(i for i, call in enumerate(calls) if i > first_failure and call["ok"])
    before, outage, after = calls[:first_failure], calls[first_failure:recovered], calls[recovered]
    assert before
    assert all(call["ok"] for call in before)
    assert len(outage) >= 2
    assert all("error" in call for call in outage)
    # From the first failure to the recovery, every poll asks from the cursor the last answer gave.
    cursor = before[-1]["nextCursor"]
    assert cursor
    assert [call["arguments"].get("cursor") for call in [*outage, after]] == [cursor] * (len(outage) + 1)
    # With backoff: 1 s, 2 s, 4 s, … between one attempt and the next.
    starts = [call["at"] for call in [*outage, after]]
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert all(gap >= 0.95 * 1000 * 2**k for k, gap in enumerate(gaps)), f"no backoff: {gaps} ms"

    # The host found no server while it was down. The restarted server still knows the
    # session (sessions live in the store, as the jobs do), so the poll that came back was
    # answered on it; only if the server came up between a refused poll and the host's
    # attempt to reconnect (a few ms) did that attempt open a new session first.
    reconnects = host.host("() => testHost.reconnects")
    assert len(reconnects) <= 1, reconnects
    assert len(host.host("() => testHost.reconnectFailures")) >= len(outage)
    if reconnects:
        assert reconnects[0]["reason"] == "Failed to fetch", reconnects
        assert reconnects[0]["from"] == before[-1]["sessionId"]
        session = reconnects[0]["to"]
    else:
        session = before[-1]["sessionId"]
    assert all(call["sessionId"] == session for call in calls[recovered:])

    history = host.valuenow_history()
    assert non_decreasing(history), f"the bar went back: {history}"
    assert 0 < shown <= history[-1] == 100
    assert_clean(host)
