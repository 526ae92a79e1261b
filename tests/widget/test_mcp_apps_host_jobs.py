"""The bulk job's view in an MCP Apps host: progress to the end, paging and search, cancel,
failure, a host that repeats and reorders events, and a teardown mid-job.

The same real host, widget and server subprocess as `test_mcp_apps_host.py`; apart so the
long jobs run beside the quick card tests.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from playwright.sync_api import expect

from tests.widget.support import (
    JOB_TIMEOUT_MS,
    HostPage,
    assert_clean,
    employees_csv,
    non_decreasing,
    people,
    polls,
    start_job,
)

pytestmark = pytest.mark.slow  # a real browser (chromium) and the test host

BULK_PEOPLE = 2_000
#: Big enough that the job is still running when Cancel is clicked (100,000 rows take ~10 s).
CANCEL_PEOPLE = 100_000
#: Long enough to outlast several 500 ms poll intervals after a teardown.
TEARDOWN_PEOPLE = 40_000
#: How often the view polls a running job (`pollAfterMs`).
POLL_SECONDS = 0.5
TERMINAL = ("completed", "failed", "cancelled")


def test_bulk_job_rises_to_completion_and_pages_and_searches_the_results(host: HostPage) -> None:
    job_id, _ = start_job(host, employees_csv(BULK_PEOPLE))
    frame = host.frame
    job = frame.locator("section.job")

    expect(job).to_have_attribute("data-status", "completed", timeout=JOB_TIMEOUT_MS)
    bar = job.locator("[role=progressbar]")
    expect(bar).to_have_attribute("aria-valuenow", "100")
    history = host.valuenow_history()
    assert history[-1] == 100
    assert non_decreasing(history), f"the bar went back: {history}"
    assert all(0 <= value <= 100 for value in history)

    results = frame.locator("section.job-results")
    expect(results.locator(".results-count")).to_have_text(re.compile(r"Showing 1\D+25 of 2,000 people"))
    rows = results.locator(".person")
    expect(rows).to_have_count(25)
    names = [row[0] for row in people(BULK_PEOPLE)]
    first_page = rows.locator(".person-name").all_inner_texts()
    assert len(set(first_page)) == 25
    assert set(first_page) <= set(names)
    expect(rows.first.locator(".person-gifts")).not_to_be_empty()
    expect(rows.first.locator(".person-department")).not_to_be_empty()

    results.locator(".page-next").click()
    expect(results.locator(".results-count")).to_have_text(re.compile(r"Showing 26\D+50 of 2,000 people"))
    second_page = rows.locator(".person-name").all_inner_texts()
    assert len(second_page) == 25
    assert not set(second_page) & set(first_page)
    results.locator(".page-prev").click()
    expect(results.locator(".results-count")).to_have_text(re.compile(r"Showing 1\D+25 of 2,000 people"))

    wanted = names[1_234]
    results.locator("input[type=search].results-search").fill(wanted)
    expect(rows).to_have_count(1)
    expect(rows.locator(".person-name")).to_have_text(wanted)
    expect(results.locator(".results-count")).to_contain_text("of 1 ")
    results.locator("input[type=search].results-search").fill("")
    expect(rows).to_have_count(25)
    expect(results.locator(".results-summary")).not_to_be_empty()

    host.page.wait_for_function("() => testHost.modelContext !== null")
    context = json.dumps(host.host("() => testHost.modelContext"))
    assert re.search(r"\b2,?000\b", context), f"the summary should say how many people: {context}"

    polled = [call for call in host.calls() if call.get("name") == "get_job_status"]
    assert polled
    assert all(call["arguments"]["jobId"] == job_id for call in polled)
    assert any(call["method"] == "resources/read" for call in host.calls()), "the host offers serverResources"
    assert_clean(host)


def test_bulk_result_through_get_job_result_without_server_resources(host: HostPage) -> None:
    job_id, _ = start_job(host, employees_csv(300), server_resources=False)
    results = host.frame.locator("section.job-results")
    expect(results.locator(".results-count")).to_have_text(re.compile(r"of 300 people"))
    calls = host.calls()
    assert [call["arguments"] for call in calls if call.get("name") == "get_job_result"] == [
        {"jobId": job_id}
    ]
    assert not any(call["method"] == "resources/read" for call in calls)
    assert_clean(host)


def test_cancel_while_running(host: HostPage) -> None:
    job_id, _ = start_job(host, employees_csv(CANCEL_PEOPLE))
    job = host.frame.locator("section.job")
    expect(job).to_have_attribute("data-status", re.compile("running|" + "|".join(TERMINAL)))
    assert job.get_attribute("data-status") == "running", "the job ended before Cancel could be clicked"
    job.locator("button.job-cancel").click()

    expect(job).to_have_attribute("data-status", "cancelled")
    assert host.server.job_status(job_id)["status"] == "cancelled"
    cancels = [call for call in host.calls() if call.get("name") == "cancel_job"]
    assert [call["arguments"] for call in cancels] == [{"jobId": job_id}]
    assert non_decreasing(host.valuenow_history())
    expect(host.frame.locator("section.job-results")).to_have_count(0)
    assert_clean(host)


def test_failed_job_shows_the_error_and_its_hint(host: HostPage) -> None:
    job_id, _ = start_job(host, "who,what\nnobody,nothing\n")
    job = host.frame.locator("section.job")
    expect(job).to_have_attribute("data-status", "failed")
    error = job.locator(".job-error")
    expect(error.locator(".error-message")).not_to_be_empty()
    expect(error.locator(".error-hint")).not_to_be_empty()
    assert host.server.job_status(job_id)["status"] == "failed"
    expect(host.frame.locator("section.job-results")).to_have_count(0)
    assert_clean(host)


def test_chaos_host_repeating_and_stale_events_change_nothing(host: HostPage) -> None:
    job_id, _ = start_job(host, employees_csv(BULK_PEOPLE), chaos=True)
    job = host.frame.locator("section.job")
    expect(job).to_have_attribute("data-status", "completed", timeout=JOB_TIMEOUT_MS)
    expect(host.frame.locator("section.job-results .results-count")).to_contain_text("of 2,000 people")
    # The answer that carried the terminal event also carried the stale ones; they were seen.
    injected = host.host("() => testHost.injected")
    assert injected["duplicates"] > 0
    assert len(injected["stale"]) >= 4
    expect(job.locator("[role=progressbar]")).to_have_attribute("aria-valuenow", "100")
    expect(job).to_have_attribute("data-status", "completed", timeout=JOB_TIMEOUT_MS)
    history = host.valuenow_history()
    assert history[-1] == 100
    assert non_decreasing(history), f"the bar went back: {history}"
    assert host.server.job_status(job_id)["status"] == "completed"
    assert_clean(host)


def test_teardown_stops_polling(host: HostPage) -> None:
    """After answering teardown the view asks nothing more, though its job runs on and it could.

    The host keeps the view, the bridge and the session after the answer (`removeView: false`),
    so a poll would still be relayed and recorded: the silence is the view's own doing.
    """
    job_id, _ = start_job(host, employees_csv(TEARDOWN_PEOPLE))
    host.page.wait_for_function(
        "() => testHost.calls.filter((c) => c.name === 'get_job_status' && c.ok).length >= 2"
    )
    job = host.frame.locator("section.job")
    assert job.get_attribute("data-status") == "running", "the job ended before the teardown"

    assert host.host("() => testHost.teardown({removeView: false})") == {}, "the view answers {}"
    torn_down_at = time.monotonic()
    answered_at = host.host("() => testHost.teardownAnsweredAt")
    polled = len(polls(host))
    assert host.server.job_status(job_id)["status"] == "running", "so the view had reason to poll on"

    # Four poll intervals go by, then the job ends (cancelled from elsewhere): a view still
    # polling every 500 ms would have asked meanwhile, and would have seen the ending. That
    # nothing was asked can only be shown over a stretch of time.
    time.sleep(4 * POLL_SECONDS)
    assert "being cancelled" in host.server.call_tool("cancel_job", {"jobId": job_id})["content"][0]["text"]
    deadline = torn_down_at + 60
    while (ended := host.server.job_status(job_id))["status"] not in TERMINAL:
        assert time.monotonic() < deadline, "the job did not end"
        time.sleep(0.1)
    assert ended["status"] == "cancelled", ended.get("error")
    quiet_for = time.monotonic() - torn_down_at
    assert quiet_for > 1.5, f"too short a wait to tell ({quiet_for:.1f} s)"
    assert len(polls(host)) == polled
    assert [call for call in host.calls() if call["at"] > answered_at] == []
    # What it shows is frozen where it was: the view takes no further change.
    assert job.get_attribute("data-status") == "running"

    # The channel was open all along: a hand-made poll from the view's document is relayed.
    probe = host.call_from_view("teardown-probe", "get_job_status", {"jobId": job_id})
    assert probe["result"]["structuredContent"]["status"] == "cancelled"
    assert len(polls(host)) == polled + 1
    assert_clean(host)
