"""herald's per-era wire-type table is the official version gate, type for type."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import pytest
from mcp_types import methods

from herald.protocol.wire_types import Direction, wire_type

OFFICIAL: list[tuple[Direction, Mapping[tuple[str, str], Any]]] = [
    ("request", methods.CLIENT_REQUESTS),
    ("notification", methods.CLIENT_NOTIFICATIONS),
    ("result", methods.SERVER_RESULTS),
]
VERSIONS = sorted({version for _, surface in OFFICIAL for _, version in surface})
METHODS = sorted({method for _, surface in OFFICIAL for method, _ in surface})


@pytest.mark.parametrize(("direction", "surface"), OFFICIAL, ids=[d for d, _ in OFFICIAL])
def test_every_official_pair_resolves_to_the_same_type(
    direction: Direction, surface: Mapping[tuple[str, str], Any]
) -> None:
    for (method, version), official in surface.items():
        assert wire_type(direction, method, version) == official, (method, version)


@pytest.mark.parametrize(("direction", "surface"), OFFICIAL, ids=[d for d, _ in OFFICIAL])
def test_no_pair_exists_that_the_official_gate_refuses(
    direction: Direction, surface: Mapping[tuple[str, str], Any]
) -> None:
    for version in VERSIONS:
        for method in METHODS:
            if (method, version) not in surface:
                with pytest.raises(KeyError):
                    wire_type(direction, method, version)


def test_an_unknown_version_is_a_bug_not_a_missing_method() -> None:
    with pytest.raises(ValueError, match="known protocol version"):
        wire_type("request", "initialize", "2099-01-01")


def test_a_handshake_session_never_builds_the_2026_models() -> None:
    """The point of the table: a handshake-era exchange imports only its own era."""
    program = """
import sys
from herald.protocol.validation import serialize_result, validate_notification_params, validate_request_params
validate_request_params("initialize", "2025-11-25", {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
validate_notification_params("notifications/initialized", "2025-11-25", None)
validate_request_params("tools/call", "2025-06-18", {"name": "echo", "arguments": {"text": "hi"}})
serialize_result("tools/call", "2025-06-18", {"content": [{"type": "text", "text": "hi"}]})
import herald.transports.stdio, herald.server.app
print(sorted(name for name in sys.modules if name.startswith("mcp_types._v")))
"""
    found = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    assert found.stdout.split() == ["['mcp_types._v2025_11_25']"]
