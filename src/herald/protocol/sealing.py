"""Sealed `requestState`: state a client carries between rounds but cannot read or forge.

A multi-round request (2026-07-28 `input_required`) may be retried on any replica, so
the state travels with the client instead of living in one process. It is JSON signed
with HMAC-SHA256 under a key the replicas share; a tampered or foreign token is refused
with invalid params. Pure computation: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Any

import orjson

from herald.protocol.errors import InvalidParams


def seal(key: bytes, purpose: str, value: Any) -> str:
    """A token holding `value`, valid only for `purpose` (e.g. the tool it belongs to)."""
    body = orjson.dumps({"p": purpose, "v": value})
    return _b64(body) + "." + _b64(_mac(key, body))


def unseal(key: bytes, purpose: str, token: str) -> Any:
    """The value sealed in `token`; `InvalidParams` if it was altered or made for another purpose."""
    body_part, _, mac_part = token.partition(".")
    try:
        body = _unb64(body_part)
        mac = _unb64(mac_part)
    except (binascii.Error, ValueError):
        raise InvalidParams("Invalid requestState: it is not a token this server issued") from None
    if not hmac.compare_digest(mac, _mac(key, body)):
        raise InvalidParams("Invalid requestState: the token was altered or issued by another server")
    data = orjson.loads(body)
    if data.get("p") != purpose:
        raise InvalidParams("Invalid requestState: the token belongs to another request")
    return data.get("v")


def _mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    if not text:
        raise ValueError("empty")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
