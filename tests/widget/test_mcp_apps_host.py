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
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.widget.support import Console, HostPage, StaticServer, employees_csv, gift_server, people

SUGGEST = {"occasion": "birthday", "budget": 60, "recipient": "loves cooking, coffee and hiking", "count": 5}
BULK_PEOPLE = 2_000
#: Big enough that the job is still running when Cancel is clicked (~10,000 rows take 0.5 s).
CANCEL_PEOPLE = 100_000
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

    expect(job).to_have_attribute("data-status", "completed")
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


def test_lost_server_is_said_while_a_job_runs(
    page: Page, console: Console, static: StaticServer, tmp_path: Path
) -> None:
    """The server goes away mid-job (its own, so the others keep theirs): the view says so."""
    with gift_server(tmp_path) as doomed:
        host = HostPage(page, console, static, doomed)
        start_job(host, employees_csv(CANCEL_PEOPLE))
        job = host.frame.locator("section.job")
        expect(job).to_have_attribute("data-status", "running")
        connection = job.locator(".connection")
        expect(connection).to_be_empty()
        doomed.process.kill()
        doomed.process.wait(timeout=10)
        expect(connection).not_to_be_empty()
        expect(job).to_have_attribute("data-status", "running")
    assert non_decreasing(host.valuenow_history())
    assert host.violations() == []


def test_chaos_host_repeating_and_stale_events_change_nothing(host: HostPage) -> None:
    job_id, _ = start_job(host, employees_csv(BULK_PEOPLE), chaos=True)
    job = host.frame.locator("section.job")
    expect(job).to_have_attribute("data-status", "completed")
    expect(host.frame.locator("section.job-results .results-count")).to_contain_text("of 2,000 people")
    # The answer that carried the terminal event also carried the stale ones; they were seen.
    injected = host.host("() => testHost.injected")
    assert injected["duplicates"] > 0
    assert len(injected["stale"]) >= 4
    expect(job.locator("[role=progressbar]")).to_have_attribute("aria-valuenow", "100")
    expect(job).to_have_attribute("data-status", "completed")
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


@pytest.mark.parametrize("first", ["dark", "light"])
def test_theme_follows_the_host(host: HostPage, first: str) -> None:
    host.run("suggest_gifts", SUGGEST, theme=first)  # type: ignore[arg-type]
    root = host.frame.locator("html")
    expect(root).to_have_attribute("data-theme", first)
    other = "light" if first == "dark" else "dark"
    host.host("(theme) => testHost.setTheme(theme)", other)
    expect(root).to_have_attribute("data-theme", other)
    assert_clean(host)


def test_teardown_is_answered(host: HostPage) -> None:
    host.run("suggest_gifts", SUGGEST)
    expect(host.frame.locator("li.gift-card").first).to_be_visible()
    assert_clean(host)
    host.host("() => testHost.teardown()")
    assert host.host("() => testHost.status") == "torn-down"
