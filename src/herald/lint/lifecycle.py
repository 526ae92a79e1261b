"""The handshake, the capabilities and the 2026-07-28 envelope: what a message may do where it stands.

The handshake era runs `initialize`, its answer, `notifications/initialized`, then work;
each side may only use what the other declared. In 2026-07-28 every request carries its
version and the client's capabilities in `_meta`, and over HTTP its headers mirror the
body; the server's capabilities are what `server/discover` said. These checks read the
conversation's state (`Conversation`) and report through the linter's `report`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from herald.lint.conversation import Conversation, Phase
from herald.lint.messages import CLIENT_CAPABILITY, NOTIFICATION_NEEDS, SERVER_CAPABILITY, has_capability
from herald.protocol.errors import ProtocolError
from herald.protocol.http import check_modern_headers
from herald.protocol.modern import read_envelope
from herald.protocol.versions import Era

Report = Callable[[str, str], None]

#: What a server may send before `notifications/initialized`.
BEFORE_INITIALIZED: Final = frozenset({"ping", "notifications/message", "notifications/progress"})


def handshake_request(
    method: str, params: Mapping[str, Any] | None, sender: str, conversation: Conversation, report: Report
) -> None:
    """A request in the handshake era: in its place in the handshake, within what was declared."""
    phase = conversation.phase
    if phase is Phase.READY and method in conversation.allowed:
        return  # checked before: the declared capabilities do not change once the handshake is done
    if sender == "client":
        if method == "initialize":
            if phase is Phase.NEW:
                conversation.phase = Phase.INITIALIZING
                capabilities = params.get("capabilities") if params is not None else None
                conversation.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
            return
        if phase is not Phase.READY:
            _early_client_request(method, conversation, report)
        may = uses(SERVER_CAPABILITY.get(method), conversation.server_capabilities, method, "server", report)
    else:
        if phase is not Phase.READY and method != "ping":
            report(
                "lifecycle/before-initialized", f"the server sent {method} before notifications/initialized"
            )
        may = uses(CLIENT_CAPABILITY.get(method), conversation.client_capabilities, method, "client", report)
    if phase is Phase.READY and may:
        conversation.allowed.add(method)


def _early_client_request(method: str, conversation: Conversation, report: Report) -> None:
    phase = conversation.phase
    if phase is Phase.NEW and conversation.from_start and not conversation.said_not_first:
        conversation.said_not_first = True
        report("lifecycle/initialize-not-first", f"{method} came before any initialize")
    elif phase is Phase.INITIALIZING and method != "ping":
        report("lifecycle/before-initialize-result", f"{method} was sent before initialize was answered")
    elif phase is Phase.ANSWERED and method != "ping":
        report("lifecycle/before-initialized", f"{method} was sent before notifications/initialized")


def initialized(result: Mapping[str, Any], conversation: Conversation) -> None:
    """`initialize` was answered: the version and the server's capabilities are settled."""
    if conversation.phase is Phase.INITIALIZING:
        conversation.phase = Phase.ANSWERED
        version, capabilities = result.get("protocolVersion"), result.get("capabilities")
        conversation.version = version if isinstance(version, str) else None
        conversation.server_capabilities = capabilities if isinstance(capabilities, dict) else {}


def modern_request(
    method: str,
    params: Mapping[str, Any] | None,
    conversation: Conversation,
    headers: Any,
    input_schema: Any,
    server_capabilities: dict[str, Any] | None,
    report: Report,
) -> None:
    """A 2026-07-28 request: its `_meta` envelope, its headers (over HTTP), and the capability it needs."""
    try:
        envelope = read_envelope(method, params)
    except ProtocolError as refused:
        report("modern/missing-meta", refused.message)
        return
    conversation.version = envelope.version
    conversation.client_capabilities = dict(envelope.client_capabilities)
    if isinstance(headers, dict):
        try:
            check_modern_headers(headers, method, params or {}, envelope.version, input_schema)
        except ProtocolError as mismatch:
            report("modern/header-mismatch", mismatch.message)
    uses(SERVER_CAPABILITY.get(method), server_capabilities, method, "server", report)


def notification(
    method: str,
    sender: str,
    conversation: Conversation,
    modern_server_capabilities: dict[str, Any] | None,
    report: Report,
) -> None:
    """A notification: in its place in the handshake, and with the capability it needs declared."""
    if sender == "client":
        if method == "notifications/initialized":
            if conversation.phase is Phase.ANSWERED:
                conversation.phase = Phase.READY
            return
        needs = NOTIFICATION_NEEDS.get(method)
        if needs is not None:
            uses(needs[1], conversation.client_capabilities, method, "client", report)
        return
    era = conversation.era
    if era is Era.HANDSHAKE and conversation.phase is not Phase.READY and method not in BEFORE_INITIALIZED:
        report("lifecycle/before-initialized", f"the server sent {method} before notifications/initialized")
    needs = NOTIFICATION_NEEDS.get(method)
    if needs is None:
        return
    declared = modern_server_capabilities if era is Era.MODERN else conversation.server_capabilities
    rule, path = needs
    if declared is not None and not has_capability(declared, path):
        report(rule, f"{method} without the server capability {'.'.join(path)}")


def uses(
    path: tuple[str, ...] | None, declared: dict[str, Any] | None, method: str, side: str, report: Report
) -> bool:
    """Whether `method` may be used as far as `declared` tells; said when it may not."""
    if path is not None and declared is not None and not has_capability(declared, path):
        report("capabilities/undeclared", f"{method} needs the {side} capability {'.'.join(path)}")
        return False
    return True
