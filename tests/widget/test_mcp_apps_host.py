"""The GiftGenius widget in an MCP Apps host: the test host page with the ext-apps AppBridge.

Everything is real but the chat: the server runs as a subprocess, the host reads the widget
with `resources/read` and renders it sandboxed under the CSP the spec's host rules build,
and the widget reaches the server only through the host. Each test ends by checking that
the widget never asked for a tool it may not call and never hit the CSP.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.widget.support import (
    JOB_TIMEOUT_MS,
    Console,
    HostPage,
    StaticServer,
    employees_csv,
    gift_server,
    people,
)

pytestmark = pytest.mark.slow  # a real browser (chromium) and the test host

SUGGEST = {"occasion": "birthday", "budget": 60, "recipient": "loves cooking, coffee and hiking", "count": 5}
BULK_PEOPLE = 2_000
#: Big enough that the job is still running when Cancel is clicked (100,000 rows take ~10 s).
CANCEL_PEOPLE = 100_000
#: Long enough to outlast several 500 ms poll intervals after a teardown, or a server's
#: restart (about 4 s; minutes under coverage on a busy machine).
TEARDOWN_PEOPLE = 40_000
#: How often the view polls a running job (`pollAfterMs`).
POLL_SECONDS = 0.5
TERMINAL = ("completed", "failed", "cancelled")


def assert_clean(host: HostPage) -> None:
    """No refused tool call, no CSP refusal, no uncaught error in the host or the widget."""
    assert host.violations() == []
    assert host.csp_violations() == []
    assert [line for line in host.console.errors if line.startswith("uncaught")] == []


def price(value: float) -> str:
    return f"${value:,.2f}"


def start_job(host: HostPage, csv: str, **options: Any) -> tuple[str, dict[str, Any]]:
    """Run the bulk tool in the host, recording aria-valuenow from before the first result."""
    result = host.run(
        "start_bulk_gift_analysis",
        {"csv": csv, "occasion": "holiday"},
        before_result=host.record_valuenow,
        **options,
    )
    job_id: str = result["toolResult"]["structuredContent"]["jobId"]
    expect(host.frame.locator(f"section.job[data-job-id='{job_id}']")).to_be_attached()
    return job_id, result


def non_decreasing(values: list[float]) -> bool:
    return all(earlier <= later for earlier, later in itertools.pairwise(values))


def test_a_notice_beside_the_cards_is_shown(host: HostPage) -> None:
    """Nothing in the catalog for fishing: the closest gifts come with the sentence that says so."""
    arguments = {"occasion": "birthday", "budget": 80, "recipient": "my dad who likes fishing"}
    structured = host.run("suggest_gifts", arguments)["toolResult"]["structuredContent"]
    assert structured["gifts"]
    assert "fishing" in structured["notice"]
    expect(host.frame.locator("main#app")).to_have_attribute("data-view", "gifts")
    expect(host.frame.locator(".gift-notice")).to_have_text(structured["notice"])
    expect(host.frame.locator("ul.gift-list > li.gift-card")).to_have_count(len(structured["gifts"]))


def test_suggest_draws_one_card_per_gift(host: HostPage) -> None:
    result = host.run("suggest_gifts", SUGGEST)
    gifts = result["toolResult"]["structuredContent"]["gifts"]
    assert gifts, "the catalog should have something for this recipient"
    frame = host.frame

    expect(frame.locator("main#app")).to_have_attribute("data-view", "gifts")
    expect(frame.locator("html")).to_have_attribute("data-host", "mcp-apps")
    cards = frame.locator("ul.gift-list > li.gift-card")
    expect(cards).to_have_count(len(gifts))
    expect(cards.locator(".gift-name")).to_have_text([gift["name"] for gift in gifts])
    expect(cards.locator(".gift-price")).to_have_text([price(gift["price"]) for gift in gifts])
    expect(cards.locator(".gift-category")).to_have_text(
        [re.compile(re.escape(g["category"]), re.I) for g in gifts]
    )
    expect(cards.locator(".gift-reason")).to_have_text([gift["reason"] for gift in gifts])
    expect(frame.locator(".gift-notice")).to_have_count(0)  # every interest had a match
    assert len(host.marks("giftgenius:tool-result")) >= 1
    assert len(host.marks("giftgenius:cards-drawn")) >= 1
    # The view reports its size and the host fits the iframe to it.
    host.page.wait_for_function(
        """() => {
          const last = testHost.sizes.at(-1);
          return last !== undefined && last.height > 100
            && Math.abs(document.getElementById('widget').clientHeight - last.height) < 2;
        }"""
    )
    assert_clean(host)


def test_widget_runs_under_the_declared_csp(host: HostPage) -> None:
    result = host.run("suggest_gifts", SUGGEST)
    frame = host.frame
    expect(frame.locator("li.gift-card").first).to_be_visible()
    policy = frame.evaluate(
        "() => document.querySelector('meta[http-equiv=Content-Security-Policy]')?.getAttribute('content')"
    )
    assert policy == result["policy"]
    assert "connect-src 'none'" in policy, "the widget declares no origins, so it may reach none"
    # The policy is in force: the document may load no image from elsewhere, nor reach the network.
    outcome = frame.evaluate(
        """async () => {
          const image = await new Promise((resolve) => {
            const probe = new Image();
            probe.onload = () => resolve('allowed');
            probe.onerror = () => resolve('blocked');
            probe.src = 'http://127.0.0.1:9/probe.png';
          });
          let network = 'allowed';
          try { await fetch('http://127.0.0.1:9/probe'); } catch { network = 'blocked'; }
          return [image, network];
        }"""
    )
    assert outcome == ["blocked", "blocked"]
    host.wait_for("() => window.__cspViolations.length >= 2")
    refused = host.frame.evaluate("() => window.__cspViolations")
    assert [line.split()[0] for line in refused] == ["img-src", "connect-src"], "the probes, nothing else"
    assert host.violations() == []


def test_suggest_tool_error_is_shown(host: HostPage) -> None:
    result = host.run("suggest_gifts", {**SUGGEST, "budget": 1})
    assert result["toolResult"]["isError"] is True
    error = host.frame.locator(".tool-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("raise the budget")
    assert_clean(host)


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


def polls(host: HostPage) -> list[dict[str, Any]]:
    """The view's `get_job_status` calls as the host recorded them, in order."""
    return [call for call in host.calls() if call.get("name") == "get_job_status"]


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
    with gift_server(tmp_path) as first:
        host = HostPage(page, console, static, first)
        job_id, _ = start_job(host, employees_csv(TEARDOWN_PEOPLE))
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

        with gift_server(tmp_path, port=first.port) as second:
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


def test_host_refuses_app_calls_to_tools_without_app_visibility(host: HostPage) -> None:
    host.run("suggest_gifts", SUGGEST)
    expect(host.frame.locator("li.gift-card").first).to_be_visible()
    assert host.violations() == []
    host.host(
        """() => testHost.addTool({
          name: 'model_only_tool', inputSchema: {type: 'object'}, _meta: {ui: {visibility: ['model']}},
        })"""
    )
    # The enforcement function itself.
    direct = host.host(
        """() => testHost.handleAppToolCall({name: 'model_only_tool', arguments: {}})
             .then(() => 'accepted', (e) => ({code: e.code, message: e.message}))"""
    )
    assert direct["code"] == -32600
    assert "not callable by apps" in direct["message"]
    # And the same through the bridge, as a view's own tools/call arrives.
    answer = host.frame.evaluate(
        """() => new Promise((resolve) => {
          addEventListener('message', function listen(event) {
            if (event.data?.id !== 'visibility-probe') return;
            removeEventListener('message', listen);
            resolve(event.data);
          });
          parent.postMessage({jsonrpc: '2.0', id: 'visibility-probe', method: 'tools/call',
                              params: {name: 'model_only_tool', arguments: {}}}, '*');
        })"""
    )
    assert "result" not in answer
    assert answer["error"]["code"] == -32600
    assert [v["tool"] for v in host.violations()] == ["model_only_tool", "model_only_tool"]
    assert [call for call in host.calls() if call.get("name") == "model_only_tool"] == [], (
        "never reached the server"
    )


#: `--color-text-primary` as the test host sets it per theme (host.ts `styleVariables`).
HOST_TEXT_COLOR = {"dark": "rgb(245, 245, 245)", "light": "rgb(28, 25, 23)"}


@pytest.mark.parametrize("first", ["dark", "light"])
def test_theme_follows_the_host(host: HostPage, first: str) -> None:
    host.run("suggest_gifts", SUGGEST, theme=first)  # type: ignore[arg-type]
    root = host.frame.locator("html")
    expect(root).to_have_attribute("data-theme", first)
    other = "light" if first == "dark" else "dark"
    # The host's style variables win over the widget's own defaults.
    host.frame.wait_for_function(
        "(want) => getComputedStyle(document.body).color === want", arg=HOST_TEXT_COLOR[first]
    )
    host.host("(theme) => testHost.setTheme(theme)", other)
    expect(root).to_have_attribute("data-theme", other)
    host.frame.wait_for_function(
        "(want) => getComputedStyle(document.body).color === want", arg=HOST_TEXT_COLOR[other]
    )
    assert_clean(host)


def test_teardown_is_answered(host: HostPage) -> None:
    host.run("suggest_gifts", SUGGEST)
    expect(host.frame.locator("li.gift-card").first).to_be_visible()
    assert_clean(host)
    assert host.host("() => testHost.teardown()") == {}
    assert host.host("() => testHost.status") == "torn-down"


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
    probe = host.frame.evaluate(
        """(jobId) => new Promise((resolve) => {
          addEventListener('message', function listen(event) {
            if (event.data?.id !== 'teardown-probe') return;
            removeEventListener('message', listen);
            resolve(event.data);
          });
          parent.postMessage({jsonrpc: '2.0', id: 'teardown-probe', method: 'tools/call',
                              params: {name: 'get_job_status', arguments: {jobId}}}, '*');
        })""",
        job_id,
    )
    assert probe["result"]["structuredContent"]["status"] == "cancelled"
    assert len(polls(host)) == polled + 1
    assert_clean(host)
