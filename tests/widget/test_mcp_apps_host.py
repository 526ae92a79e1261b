"""The GiftGenius widget in an MCP Apps host: the test host page with the ext-apps AppBridge.

Everything is real but the chat: the server runs as a subprocess, the host reads the widget
with `resources/read` and renders it sandboxed under the CSP the spec's host rules build,
and the widget reaches the server only through the host. Each test ends by checking that
the widget never asked for a tool it may not call and never hit the CSP.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.widget.support import (
    HostPage,
    assert_clean,
)

pytestmark = pytest.mark.slow  # a real browser (chromium) and the test host

SUGGEST = {"occasion": "birthday", "budget": 60, "recipient": "loves cooking, coffee and hiking", "count": 5}


def price(value: float) -> str:
    return f"${value:,.2f}"


def test_a_notice_beside_the_cards_is_shown(host: HostPage) -> None:
    """Nothing in the catalog for sailing: the closest gifts come with the sentence that says so."""
    arguments = {"occasion": "birthday", "budget": 80, "recipient": "my dad who likes sailing"}
    structured = host.run("suggest_gifts", arguments)["toolResult"]["structuredContent"]
    assert structured["gifts"]
    assert "sailing" in structured["notice"]
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
    answer = host.call_from_view("visibility-probe", "model_only_tool", {})
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
