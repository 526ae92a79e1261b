"""A widget declared once is described in both hosts' vocabularies, in both eras."""

from __future__ import annotations

from typing import Any

import pytest

from herald import Server, ToolUI, Widget, WidgetCSP
from herald.server.widgets import UI_MIME_TYPE, app_only
from herald.testing import connect

HTML = "<!DOCTYPE html><html><body><main id='app'></main></body></html>"


def make_server(widget: Widget) -> Server:
    server = Server("shop")

    @server.tool(ui=ToolUI(widget, invoking="Looking…", invoked="Found it"), meta={"shop/own": 1})
    def find(query: str) -> dict[str, Any]:
        """Find things."""
        return {"found": [query]}

    @server.tool(ui=app_only())
    def next_page(page: int) -> dict[str, Any]:
        """A page of results, for the widget."""
        return {"page": page}

    @server.tool(ui=ToolUI(visibility=("model",)))
    def model_only() -> str:
        """Only the model calls this."""
        return "ok"

    return server


def test_the_uri_carries_a_hash_of_what_hosts_cache() -> None:
    widget = Widget("cards", HTML)
    uri = widget.uri("shop")
    assert uri.startswith("ui://shop/cards-")
    assert uri.endswith(".html")
    assert Widget("cards", HTML).uri("shop") == uri
    assert Widget("cards", HTML.replace("app", "root")).uri("shop") != uri
    assert Widget("cards", HTML, domain="https://shop.example").uri("shop") != uri
    assert Widget("cards", HTML, csp=WidgetCSP(connect_domains=("https://api.example",))).uri("shop") != uri
    assert Widget("cards", HTML, namespace="other").uri("shop").startswith("ui://other/cards-")


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"name": "Cards", "html": HTML}, "lowercase"),
        ({"name": "cards", "html": "<div>not a document</div>"}, "HTML5 document"),
    ],
)
def test_a_widget_must_be_named_simply_and_be_a_whole_document(
    arguments: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        Widget(**arguments)


def test_status_lines_and_visibility_are_checked() -> None:
    with pytest.raises(ValueError, match="64"):
        ToolUI(invoking="x" * 65)
    with pytest.raises(ValueError, match="visibility"):
        ToolUI(visibility=())
    with pytest.raises(ValueError, match="visibility"):
        ToolUI(visibility=("user",))  # type: ignore[arg-type]  # the mistake under test


def test_csp_fields_are_spelled_for_each_host() -> None:
    csp = WidgetCSP(
        connect_domains=("https://api.example",),
        resource_domains=("https://cdn.example",),
        frame_domains=("https://video.example",),
        base_uri_domains=("https://base.example",),
        redirect_domains=("https://checkout.example",),
    )
    assert csp.for_mcp_apps() == {
        "connectDomains": ["https://api.example"],
        "resourceDomains": ["https://cdn.example"],
        "frameDomains": ["https://video.example"],
        "baseUriDomains": ["https://base.example"],
    }
    assert csp.for_openai() == {
        "connect_domains": ["https://api.example"],
        "resource_domains": ["https://cdn.example"],
        "frame_domains": ["https://video.example"],
        "redirect_domains": ["https://checkout.example"],
    }
    assert WidgetCSP().for_mcp_apps() == {"connectDomains": [], "resourceDomains": []}


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "modern"])
async def test_tools_carry_both_vocabularies(modern: bool) -> None:
    widget = Widget("cards", HTML, description="Result cards")
    uri = widget.uri("shop")
    async with connect(make_server(widget), modern=modern) as client:
        tools = {tool["name"]: tool for tool in (await client.request("tools/list"))["tools"]}
    assert tools["find"]["_meta"] == {
        "ui": {"resourceUri": uri, "visibility": ["model", "app"]},
        "openai/outputTemplate": uri,
        "openai/widgetAccessible": True,
        "openai/visibility": "public",
        "openai/toolInvocation/invoking": "Looking…",
        "openai/toolInvocation/invoked": "Found it",
        "shop/own": 1,
    }
    assert tools["next_page"]["_meta"] == {
        "ui": {"visibility": ["app"]},
        "openai/widgetAccessible": True,
        "openai/visibility": "private",
    }
    assert tools["model_only"]["_meta"]["ui"] == {"visibility": ["model"]}
    assert tools["model_only"]["_meta"]["openai/widgetAccessible"] is False


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "modern"])
async def test_the_widget_resource_is_listed_and_read_with_its_metadata(modern: bool) -> None:
    widget = Widget("cards", HTML, title="Cards", description="Result cards", domain="https://shop.example")
    uri = widget.uri("shop")
    expected_meta = {
        "ui": {
            "csp": {"connectDomains": [], "resourceDomains": []},
            "prefersBorder": True,
            "domain": "https://shop.example",
        },
        "openai/widgetCSP": {"connect_domains": [], "resource_domains": []},
        "openai/widgetPrefersBorder": True,
        "openai/widgetDescription": "Result cards",
        "openai/widgetDomain": "https://shop.example",
    }
    async with connect(make_server(widget), modern=modern) as client:
        listed = (await client.request("resources/list"))["resources"]
        read = await client.request("resources/read", {"uri": uri})
    assert listed == [
        {
            "uri": uri,
            "name": "cards",
            "title": "Cards",
            "description": "Result cards",
            "mimeType": UI_MIME_TYPE,
            "_meta": expected_meta,
        }
    ]
    assert read["contents"] == [{"uri": uri, "mimeType": UI_MIME_TYPE, "text": HTML, "_meta": expected_meta}]


async def test_an_older_uri_of_the_widget_answers_with_the_current_document() -> None:
    old = Widget("cards", HTML.replace("app", "old-app"))
    current = Widget("cards", HTML)
    async with connect(make_server(current)) as client:
        read = await client.request("resources/read", {"uri": old.uri("shop")})
        assert read["contents"][0]["uri"] == old.uri("shop")
        assert read["contents"][0]["text"] == HTML
        missing = await client.request_raw("resources/read", {"uri": "ui://shop/other-0123.html"})
    assert missing["error"]["code"] in (-32002, -32602)


async def test_one_widget_on_many_tools_is_one_resource() -> None:
    widget = Widget("cards", HTML)
    server = make_server(widget)

    @server.tool(ui=widget)
    def another() -> str:
        """Also shows cards."""
        return "ok"

    async with connect(server) as client:
        listed = (await client.request("resources/list"))["resources"]
        tools = {tool["name"]: tool for tool in (await client.request("tools/list"))["tools"]}
    assert [entry["uri"] for entry in listed] == [widget.uri("shop")]
    assert tools["another"]["_meta"]["ui"] == {
        "resourceUri": widget.uri("shop"),
        "visibility": ["model", "app"],
    }


async def test_metadata_does_not_wait_for_the_client_to_declare_the_ui_extension() -> None:
    widget = Widget("cards", HTML)
    async with connect(make_server(widget), capabilities={}) as client:
        tools = (await client.request("tools/list"))["tools"]
        result = await client.call_tool("find", {"query": "lamp"})
    assert tools[0]["_meta"]["ui"]["resourceUri"] == widget.uri("shop")
    assert result["content"][0]["text"]  # text that makes sense without any UI
    assert result["structuredContent"] == {"found": ["lamp"]}
