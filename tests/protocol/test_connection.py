"""The sans-IO server connection, message by message: no event loop, no transport."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from herald.protocol.codec import Batch
from herald.protocol.connection import (
    Answered,
    BatchReceived,
    CancelRequested,
    ClientAnswered,
    Ignored,
    RequestReceived,
    ServerConnection,
    refused_whole,
    reply_ids,
)
from herald.protocol.messages import ErrorResponse, Notification, Request, Response
from herald.protocol.versions import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY, Era

HELLO = {"capabilities": {"tools": {}}, "serverInfo": {"name": "t", "version": "1"}}
INIT = {
    "protocolVersion": "2025-03-26",
    "capabilities": {"roots": {}},
    "clientInfo": {"name": "c", "version": "1"},
}
MODERN_META = {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}}


def connection(**kwargs: Any) -> ServerConnection:
    return ServerConnection(lambda: dict(HELLO), **kwargs)


def initialized() -> ServerConnection:
    conn = connection()
    assert isinstance(conn.receive(Request(0, "initialize", INIT)), Answered)
    conn.receive(Notification("notifications/initialized"))
    return conn


def error_of(event: object) -> dict[str, Any]:
    assert isinstance(event, Answered)
    assert isinstance(event.reply, ErrorResponse)
    return event.reply.error


def test_initialize_is_answered_by_the_connection_and_opens_the_session() -> None:
    conn = connection()
    event = conn.receive(Request(1, "initialize", INIT))
    assert isinstance(event, Answered)
    assert isinstance(event.reply, Response)
    assert event.reply.result == {"protocolVersion": "2025-03-26", **HELLO}
    assert conn.session is not None
    assert conn.session.client_capabilities == {"roots": {}}
    assert not conn.may_notify, "nothing goes out before notifications/initialized"
    conn.receive(Notification("notifications/initialized"))
    assert conn.may_notify


def test_requests_before_initialize_are_refused_but_ping_is_served() -> None:
    conn = connection()
    assert "initialize" in error_of(conn.receive(Request(1, "tools/list")))["message"]
    ping = conn.receive(Request(2, "ping"))
    assert isinstance(ping, RequestReceived)
    assert ping.era is Era.HANDSHAKE


def test_handshake_request_carries_the_session_and_progress_token() -> None:
    conn = initialized()
    event = conn.receive(Request(5, "tools/call", {"name": "x", "_meta": {"progressToken": "p"}}))
    assert isinstance(event, RequestReceived)
    assert event.era is Era.HANDSHAKE
    assert event.version == "2025-03-26"
    assert event.progress_token == "p"
    assert event.session is conn.session
    assert event.log_threshold == "info"


def test_a_duplicate_id_in_flight_is_refused_and_free_again_once_finished() -> None:
    conn = initialized()
    assert isinstance(conn.receive(Request(7, "tools/list")), RequestReceived)
    assert "already in use" in error_of(conn.receive(Request(7, "tools/list")))["message"]
    conn.request_finished(7)
    assert isinstance(conn.receive(Request(7, "tools/list")), RequestReceived)


def test_cancellation_names_a_request_in_flight_only() -> None:
    conn = initialized()
    conn.receive(Request("a", "tools/call", {"name": "slow"}))
    assert conn.receive(Notification("notifications/cancelled", {"requestId": "a"})) == CancelRequested("a")
    conn.request_finished("a")
    assert isinstance(conn.receive(Notification("notifications/cancelled", {"requestId": "a"})), Ignored)


def test_modern_request_needs_no_session_and_reads_its_envelope() -> None:
    conn = connection()
    meta = {**MODERN_META, "progressToken": 3}
    event = conn.receive(Request(1, "tools/list", {"_meta": meta}))
    assert isinstance(event, RequestReceived)
    assert event.era is Era.MODERN
    assert event.session is None
    assert event.progress_token == 3
    assert conn.session is None


def test_modern_envelope_errors_are_answered() -> None:
    conn = connection()
    bad = {"_meta": {PROTOCOL_VERSION_KEY: "2099-01-01", CLIENT_CAPABILITIES_KEY: {}}}
    assert error_of(conn.receive(Request(1, "tools/list", bad)))["code"] == -32022
    removed = conn.receive(Request(2, "ping", {"_meta": MODERN_META}))
    assert error_of(removed)["code"] == -32601


def test_over_http_a_version_header_that_disagrees_wins_over_an_unknown_version() -> None:
    conn = connection()
    bad = {"_meta": {PROTOCOL_VERSION_KEY: "2099-01-01", CLIENT_CAPABILITIES_KEY: {}}}
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
    assert error_of(conn.receive(Request(1, "tools/list", bad), headers))["code"] == -32020
    agreeing = {**headers, "mcp-protocol-version": "2099-01-01"}
    assert error_of(conn.receive(Request(2, "tools/list", bad), agreeing))["code"] == -32022


def test_over_http_mirrored_params_must_match_the_tool_schema() -> None:
    schema = {"properties": {"city": {"type": "string", "x-mcp-header": "City"}}}
    conn = connection(tool_schema=lambda name: schema if name == "weather" else None)
    params = {"name": "weather", "arguments": {"city": "Oslo"}, "_meta": MODERN_META}
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "weather"}
    assert error_of(conn.receive(Request(1, "tools/call", params), headers))["code"] == -32020
    good = {**headers, "mcp-param-city": "Oslo"}
    assert isinstance(conn.receive(Request(2, "tools/call", params), good), RequestReceived)


def test_batches_only_on_a_2025_03_26_session() -> None:
    fresh = connection()
    refusal = fresh.receive(Batch((Request(1, "ping"),)))
    assert isinstance(refusal, Answered)
    assert refusal.reply.id is None
    conn = initialized()
    invalid = ErrorResponse(None, {"code": -32600, "message": "not a message"})
    batch = conn.receive(Batch((Request(1, "tools/list"), Notification("notifications/x"), invalid)))
    assert isinstance(batch, BatchReceived)
    kinds = [type(event) for event in batch.events]
    assert kinds == [RequestReceived, Ignored, Answered]


def test_what_a_message_is_answered_with() -> None:
    """`reply_ids` is what an answer carries; `refused_whole` says nothing was taken in."""
    refusal = connection().receive(Batch((Request(1, "ping"),)))
    assert reply_ids(refusal) == {None}
    assert refused_whole(refusal)
    conn = initialized()
    invalid = ErrorResponse(None, {"code": -32600, "message": "not a message"})
    mixed = conn.receive(Batch((Request(1, "tools/list"), Notification("notifications/x"), invalid)))
    assert reply_ids(mixed) == {1, None}
    assert not refused_whole(mixed)
    no_messages = conn.receive(Batch((invalid, ErrorResponse(2, {"code": -32600, "message": "no"}))))
    assert reply_ids(no_messages) == {None, 2}
    assert refused_whole(no_messages)
    notifications = conn.receive(Batch((Notification("notifications/x"),)))
    assert reply_ids(notifications) == frozenset()
    assert not refused_whole(notifications)
    duplicate = conn.receive(Request(1, "ping"))  # 1 is still in flight: a refusal of a request
    assert reply_ids(duplicate) == {1}
    assert not refused_whole(duplicate)
    assert reply_ids(conn.receive(Notification("notifications/x"))) == frozenset()


def test_answers_to_our_requests_are_paired_once() -> None:
    conn = initialized()
    request = conn.start_request("roots/list", {})
    assert request.id in conn.awaiting_client
    answer = conn.receive(Response(request.id, {"roots": []}))
    assert answer == ClientAnswered(request.id, result={"roots": []})
    assert isinstance(conn.receive(Response(request.id, {})), Ignored), "a second answer pairs with nothing"
    refused = conn.start_request("sampling/createMessage", {})
    error = {"code": -1, "message": "no"}
    assert conn.receive(ErrorResponse(refused.id, error)) == ClientAnswered(refused.id, error=error)


def test_a_client_error_without_id_is_a_warning() -> None:
    event = initialized().receive(ErrorResponse(None, {"code": -32700, "message": "parse"}))
    assert isinstance(event, Ignored)
    assert event.warn


def test_bytes_that_are_no_message_are_answered() -> None:
    conn = connection(max_message_bytes=100)
    assert error_of(conn.receive_data(b"{nope"))["code"] == -32700
    oversize = orjson.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"x": "y" * 200}})
    event = conn.receive_data(oversize)
    assert isinstance(event, Answered)
    assert event.reply.id == 9


def test_notifications_go_out_by_subscription_and_declared_list_changes() -> None:
    conn = initialized()
    assert conn.session is not None
    conn.session.subscriptions.add("a://x")
    assert conn.may_send("a://x", list_changed=False)
    assert not conn.may_send("a://y", list_changed=False)
    assert conn.may_send(None, list_changed=True)
    assert not conn.may_send(None, list_changed=False)
    assert not connection().may_send(None, list_changed=True), "not before the handshake"


def test_endless_requests_are_known_and_closing_refuses_everything() -> None:
    conn = connection()
    listen = conn.receive(Request(1, "subscriptions/listen", {"_meta": MODERN_META}))
    assert isinstance(listen, RequestReceived)
    assert conn.endless == {1}
    conn.close()
    assert "closed" in error_of(conn.receive(Request(2, "ping")))["message"]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28", "1999-01-01"])
def test_era_is_a_value_of_the_version(version: str) -> None:
    assert Era.of(version).modern is (version == "2026-07-28")
