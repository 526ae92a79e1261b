"""The GiftGenius widget as ChatGPT's Apps SDK shows it: top-level, talking to `window.openai`.

The page is the widget's HTML itself (read with a real `resources/read`), and the
`window.openai` shim is injected before it loads; the widget must find no MCP Apps host
and use the shim at once. ChatGPT cannot read resources for a widget, so the bulk result
comes through the app-only `get_job_result` tool.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.widget.support import (
    JOB_TIMEOUT_MS,
    Console,
    GiftServer,
    OpenAIPage,
    StaticServer,
    employees_csv,
)

pytestmark = pytest.mark.slow  # a real browser (chromium) and the test host

SUGGEST = {"occasion": "wedding", "budget": 80, "recipient": "a couple who love tea, wine and gardening"}


def open_widget(
    page: Page, console: Console, static: StaticServer, server: GiftServer, **kwargs: Any
) -> OpenAIPage:
    return OpenAIPage(page, console, static, server, **kwargs)


def assert_clean(widget: OpenAIPage) -> None:
    assert widget.shim("() => openaiShim.violations") == []
    assert widget.shim("() => openaiShim.error") is None
    assert widget.csp_violations() == []
    assert [line for line in widget.console.errors if line.startswith("uncaught")] == []


@pytest.mark.parametrize("preload", [False, True], ids=["output-by-event", "output-at-load"])
def test_suggest_cards(
    page: Page, console: Console, static: StaticServer, server: GiftServer, preload: bool
) -> None:
    widget = open_widget(
        page, console, static, server, tool="suggest_gifts", arguments=SUGGEST, preload=preload
    )
    expect(page.locator("html")).to_have_attribute("data-host", "openai")
    cards = page.locator("ul.gift-list > li.gift-card")
    expect(cards.first).to_be_visible()
    gifts = page.evaluate("() => window.openai.toolOutput.gifts")
    assert gifts
    expect(cards).to_have_count(len(gifts))
    expect(cards.locator(".gift-name")).to_have_text([gift["name"] for gift in gifts])
    expect(cards.locator(".gift-price")).to_have_text([f"${gift['price']:,.2f}" for gift in gifts])
    if not preload:
        assert ["toolOutput", "toolResponseMetadata"] in widget.shim("() => openaiShim.setGlobalsEvents")
    assert_clean(widget)


def test_theme_from_globals(page: Page, console: Console, static: StaticServer, server: GiftServer) -> None:
    widget = open_widget(page, console, static, server, tool="suggest_gifts", arguments=SUGGEST, theme="dark")
    root = page.locator("html")
    expect(root).to_have_attribute("data-theme", "dark")
    widget.shim("() => openaiShim.setGlobals({theme: 'light'})")
    expect(root).to_have_attribute("data-theme", "light")
    assert_clean(widget)


def test_bulk_job_through_window_openai(
    page: Page, console: Console, static: StaticServer, server: GiftServer
) -> None:
    arguments = {"csv": employees_csv(2_000), "occasion": "holiday"}
    widget = open_widget(page, console, static, server, tool="start_bulk_gift_analysis", arguments=arguments)
    job = page.locator("section.job")
    expect(job).to_have_attribute("data-status", "completed", timeout=JOB_TIMEOUT_MS)
    expect(job.locator("[role=progressbar]")).to_have_attribute("aria-valuenow", "100")
    results = page.locator("section.job-results")
    expect(results.locator(".results-count")).to_have_text(re.compile(r"Showing 1\D+25 of 2,000 people"))
    expect(results.locator(".person")).to_have_count(25)

    job_id = job.get_attribute("data-job-id")
    assert job_id
    calls = widget.shim("() => openaiShim.calls")
    names = [call["name"] for call in calls]
    assert names[0] == "start_bulk_gift_analysis"
    assert "get_job_status" in names
    assert [call["arguments"] for call in calls if call["name"] == "get_job_result"] == [{"jobId": job_id}]

    states = widget.shim("() => openaiShim.widgetStates")
    assert states, "the widget keeps its place in widgetState"
    assert all(state.get("jobId") == job_id for state in states)
    assert any(isinstance(state.get("cursor"), str) for state in states)
    assert page.evaluate("() => window.openai.widgetState") == states[-1]
    assert server.job_status(job_id)["status"] == "completed"
    assert_clean(widget)


def test_bulk_resumes_from_widget_state(
    page: Page, console: Console, static: StaticServer, server: GiftServer
) -> None:
    """A second render of the same message: ChatGPT hands back the call and the saved widgetState."""
    arguments = {"csv": employees_csv(500)}
    started = server.call_tool("start_bulk_gift_analysis", arguments)
    job_id = started["structuredContent"]["jobId"]
    first = server.job_status(job_id)
    state = {"jobId": job_id, "cursor": first["nextCursor"]}
    widget = open_widget(
        page,
        console,
        static,
        server,
        tool="start_bulk_gift_analysis",
        arguments=arguments,
        tool_result=started,
        widget_state=state,
    )
    job = page.locator(f"section.job[data-job-id='{job_id}']")
    expect(job).to_have_attribute("data-status", "completed", timeout=JOB_TIMEOUT_MS)
    expect(page.locator("section.job-results .results-count")).to_contain_text("of 500 people")
    calls = widget.shim("() => openaiShim.calls")
    assert [call["name"] for call in calls].count("start_bulk_gift_analysis") == 0, "no second job"
    polled = [call for call in calls if call["name"] == "get_job_status"]
    assert polled
    assert polled[0]["arguments"] == {"jobId": job_id, "cursor": first["nextCursor"]}
    assert_clean(widget)


def test_shim_refuses_tools_not_widget_accessible(
    page: Page, console: Console, static: StaticServer, server: GiftServer
) -> None:
    widget = open_widget(page, console, static, server, tool="suggest_gifts", arguments=SUGGEST)
    expect(page.locator("li.gift-card").first).to_be_visible()
    assert_clean(widget)
    widget.shim("() => openaiShim.addTool({name: 'private_tool', inputSchema: {type: 'object'}, _meta: {}})")
    outcome = widget.shim(
        "() => window.openai.callTool('private_tool', {}).then(() => 'accepted', (e) => e.message)"
    )
    assert "refused" in outcome
    assert widget.shim("() => openaiShim.violations") == [
        {"tool": "private_tool", "reason": "not openai/widgetAccessible"}
    ]
    assert "private_tool" not in [call["name"] for call in widget.shim("() => openaiShim.calls")]
