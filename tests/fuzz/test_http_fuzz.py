"""Any POST, GET or DELETE to GiftGenius's HTTP endpoint gets the documented refusal or a valid
answer: never a 500, a traceback, or an internal error (-32603).

The server is the real app under uvicorn, on a thread of its own for the module; each
example is one request from a client of its own, some on a live session, some with a
made-up one, some 2026-07-28, some not even JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from giftgenius.app import build_server
from herald.stores.memory import MemoryJobStore
from herald.testing.http import serve_http
from herald.transports.http import HttpConfig
from tests.fuzz.conftest import FUZZ
from tests.fuzz.strategies import BODIES, HEADERS, JSON
from tests.messages import initialize

BASE = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = initialize(request_id=0)
#: Made once: a client makes one of its own by default, which costs more than the request.
TLS = ssl.create_default_context()
#: A stream the server keeps open (a GET, a listen) is read this long, then let go.
READ_FOR = 0.5


class Served:
    def __init__(self) -> None:
        self.url = ""
        self.session = ""
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)

    async def _serve(self) -> None:
        server = build_server()
        server.use_job_store(MemoryJobStore())
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        async with serve_http(server, HttpConfig(max_body_bytes=64 * 1024)) as (url, _):
            self.url = url
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> Served:
        self._thread.start()
        assert self._ready.wait(30), "the server did not start"
        with httpx.Client(timeout=10) as http:
            opened = http.post(self.url, json=INIT, headers=BASE)
            self.session = opened.headers["mcp-session-id"]
            headers = BASE | {"mcp-session-id": self.session, "mcp-protocol-version": "2025-11-25"}
            http.post(
                self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
            )
        return self

    def __exit__(self, *_: object) -> None:
        assert self._loop is not None
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with Served() as running:
        yield running


def check(response: httpx.Response, body: bytes) -> None:
    """No 500, no traceback, no internal error, in a JSON answer or in any event of a stream."""
    assert response.status_code < 500, (response.status_code, body[:500])
    assert b"Traceback" not in body
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        for message in _messages(orjson.loads(body)):
            assert _code(message) != -32603, message
    elif kind.startswith("text/event-stream"):
        for line in body.splitlines():
            if line.startswith(b"data:") and line[5:].strip():
                for message in _messages(orjson.loads(line[5:])):
                    assert _code(message) != -32603, message


def _messages(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _code(message: Any) -> Any:
    error = message.get("error") if isinstance(message, dict) else None
    return error.get("code") if isinstance(error, dict) else None


def send(method: str, url: str, headers: dict[str, str], content: bytes | None) -> None:
    asyncio.run(_send(method, url, headers, content))


async def _send(method: str, url: str, headers: dict[str, str], content: bytes | None) -> None:
    """Wait for the answer's head as long as any client would; read an event stream the
    server may keep open for `READ_FOR`, and check what came."""
    async with (
        httpx.AsyncClient(timeout=10, verify=TLS) as http,
        http.stream(method, url, headers=headers, content=content) as response,
    ):
        streamed = response.headers.get("content-type", "").startswith("text/event-stream")
        body = b""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(READ_FOR if streamed else 10):
                async for chunk in response.aiter_bytes():
                    body += chunk
        check(response, body)


SESSIONS = st.sampled_from(["live", "none", "made-up"])


def encoded(body: Any) -> bytes:
    """JSON as a client might write it: integers of any size, and NaN, which is not JSON at all."""
    return json.dumps(body).encode()


@FUZZ
@given(body=BODIES, headers=HEADERS, session=SESSIONS)
def test_any_post(served: Served, body: Any, headers: dict[str, str], session: str) -> None:
    sent = BASE | headers
    if session == "live":
        sent["mcp-session-id"] = served.session
    elif session == "none":
        sent.pop("mcp-session-id", None)
    send("POST", served.url, sent, encoded(body))


@FUZZ
@given(raw=st.binary(max_size=200) | JSON.map(lambda value: encoded(value) + b"x"), headers=HEADERS)
def test_any_bytes(served: Served, raw: bytes, headers: dict[str, str]) -> None:
    send("POST", served.url, BASE | headers | {"mcp-session-id": served.session}, raw)


@FUZZ
@given(headers=HEADERS, session=SESSIONS, method=st.sampled_from(["GET", "DELETE", "PUT", "PATCH"]))
@pytest.mark.slow
def test_any_get_or_delete(served: Served, headers: dict[str, str], session: str, method: str) -> None:
    sent = {"accept": "text/event-stream"} | headers
    if session == "live" and method != "DELETE":  # a DELETE would end the session the others use
        sent["mcp-session-id"] = served.session
    elif session == "none":
        sent.pop("mcp-session-id", None)
    send(method, served.url, sent, None)
