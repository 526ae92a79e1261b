"""CORS: the pages that may call the endpoint are told so, on every answer; no other page is."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from herald.testing.http import serve_http
from herald.transports.http import HttpConfig
from tests.transports.http.conftest import HEADERS, INIT_PARAMS, Running, build_server

LISTED = "https://inspector.example"
UNLISTED = "https://evil.example"
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}
#: What browser clients of both eras ask to send; `mcp-param-region` stands for any tool's own.
REQUESTED = [
    "content-type",
    "accept",
    "authorization",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-param-region",
]


@pytest.fixture
async def listed() -> AsyncIterator[Running]:
    server = build_server()
    config = HttpConfig(session_ttl=60, keepalive_interval=0.2, cors_origins=frozenset({LISTED}))
    async with serve_http(server, config) as (url, app), httpx.AsyncClient(timeout=10) as client:
        yield Running(server, url, client, app)


def preflight(running: Running, origin: str, **extra: str) -> httpx.Request:
    headers = {
        "origin": origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": ", ".join(REQUESTED),
        **extra,
    }
    return running.client.build_request("OPTIONS", running.url, headers=headers)


def listed_names(value: str) -> set[str]:
    return {name.strip().lower() for name in value.split(",")}


async def test_a_listed_origin_gets_a_full_preflight(listed: Running) -> None:
    # A public page calling a server on this machine: Chrome asks for Private Network Access.
    request = preflight(listed, LISTED, **{"access-control-request-private-network": "true"})
    response = await listed.client.send(request)
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == LISTED
    assert listed_names(response.headers["access-control-allow-methods"]) == {"get", "post", "delete"}
    assert set(REQUESTED) <= listed_names(response.headers["access-control-allow-headers"])
    assert response.headers["access-control-max-age"] == "600"
    assert response.headers["access-control-allow-private-network"] == "true"
    assert "origin" in listed_names(response.headers["vary"])


async def test_an_unlisted_origin_gets_no_grant_and_is_refused(listed: Running) -> None:
    answered = await listed.client.send(preflight(listed, UNLISTED))
    assert answered.status_code == 400
    assert "access-control-allow-origin" not in answered.headers
    refused = await listed.client.post(listed.url, json=INITIALIZE, headers={**HEADERS, "origin": UNLISTED})
    assert refused.status_code == 403
    assert "access-control-allow-origin" not in refused.headers


async def test_listing_an_origin_lets_it_pass_the_origin_check(listed: Running, running: Running) -> None:
    refused = await running.post(INITIALIZE, origin=LISTED)
    assert refused.status_code == 403
    answered = await listed.post(INITIALIZE, origin=LISTED)
    assert answered.status_code == 200
    assert answered.headers["mcp-session-id"]
    assert answered.headers["access-control-allow-origin"] == LISTED
    assert "mcp-session-id" in listed_names(answered.headers["access-control-expose-headers"])
    assert "origin" in listed_names(answered.headers["vary"])


async def test_a_listed_origin_still_needs_an_allowed_host(listed: Running) -> None:
    response = await listed.post(INITIALIZE, origin=LISTED, host="evil.example")
    assert response.status_code == 403
    assert "Host" in response.json()["error"]["message"]


async def test_streams_and_errors_carry_the_grant(listed: Running) -> None:
    session_id = (await listed.post(INITIALIZE, origin=LISTED)).headers["mcp-session-id"]
    session = {"mcp-session-id": session_id, "origin": LISTED}
    await listed.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, **session)
    params = {"name": "steps", "arguments": {"count": 2}, "_meta": {"progressToken": 1}}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    streamed = await listed.post(call, **session)
    assert streamed.headers["content-type"] == "text/event-stream"
    assert streamed.headers["access-control-allow-origin"] == LISTED
    get_headers = {"accept": "text/event-stream", **session}
    async with listed.client.stream("GET", listed.url, headers=get_headers) as listening:
        assert listening.headers["content-type"] == "text/event-stream"
        assert listening.headers["access-control-allow-origin"] == LISTED
    not_acceptable = await listed.post(call, accept="application/json", **session)
    assert not_acceptable.status_code == 406
    assert not_acceptable.headers["access-control-allow-origin"] == LISTED


async def test_by_default_no_other_origin_is_granted(running: Running) -> None:
    answered = await running.client.send(preflight(running, LISTED))
    assert "access-control-allow-origin" not in answered.headers
    plain = await running.post(INITIALIZE)
    assert plain.status_code == 200
    assert not [name for name in plain.headers if name.startswith("access-control-")]


async def test_the_inspector_on_loopback_needs_no_listing(running: Running) -> None:
    inspector = "http://localhost:6274"
    answered = await running.client.send(preflight(running, inspector))
    assert answered.headers["access-control-allow-origin"] == inspector
    initialized = await running.post(INITIALIZE, origin=inspector)
    assert initialized.headers["access-control-allow-origin"] == inspector


@pytest.mark.parametrize(
    "origin", ["http://localhost:6274", "https://inspector.example", "https://[::1]:8443", "null"]
)
def test_origins_as_browsers_send_them_are_accepted(origin: str) -> None:
    assert HttpConfig(cors_origins=frozenset({origin})).cors_origins == {origin}


@pytest.mark.parametrize(
    ("origin", "said"),
    [
        ("*", "every web page"),
        ("http://localhost:6274/", "as 'http://localhost:6274'"),
        ("HTTP://LocalHost:6274", "as 'http://localhost:6274'"),
        ("https://inspector.example:443", "as 'https://inspector.example'"),
        ("http://me@localhost:6274", "as 'http://localhost:6274'"),
        ("localhost:6274", "is not an origin"),
        ("http://localhost:99999", "is not an origin"),
    ],
)
def test_origins_no_browser_sends_are_refused_at_configuration(origin: str, said: str) -> None:
    with pytest.raises(ValueError, match="cors_origins") as refused:
        HttpConfig(cors_origins=frozenset({origin}))
    assert said in str(refused.value)
