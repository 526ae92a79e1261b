"""Sealed `requestState`: state a client carries between rounds but can neither read nor forge.

A multi-round request (2026-07-28 `input_required`) may be retried on any replica, so
the state travels with the client instead of living in one process. It is JSON
encrypted and authenticated with AES-256-GCM under a key the replicas share, bound to
its purpose (the request it belongs to) as associated data: a tampered token, a token
of another request, or one sealed under another key is refused with invalid params.
Earlier answers travel inside it, and they are the user's input: hence encryption, not
just a signature. Pure computation: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
from typing import Any

import orjson

from herald.protocol.errors import InvalidParams

NONCE_BYTES = 12


def seal(key: bytes, purpose: str, value: Any) -> str:
    """A token holding `value`, opened only by `unseal` with the same key and purpose."""
    nonce = secrets.token_bytes(NONCE_BYTES)
    sealed = _cipher(key).encrypt(nonce, orjson.dumps(value), purpose.encode())
    return base64.urlsafe_b64encode(nonce + sealed).decode("ascii").rstrip("=")


def unseal(key: bytes, purpose: str, token: str) -> Any:
    """The value sealed in `token`; `InvalidParams` if it was altered or made for something else."""
    from cryptography.exceptions import InvalidTag

    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise InvalidParams("Invalid requestState: it is not a token this server issued") from None
    if len(raw) <= NONCE_BYTES:
        raise InvalidParams("Invalid requestState: it is not a token this server issued")
    try:
        plain = _cipher(key).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], purpose.encode())
    except InvalidTag:
        raise InvalidParams(
            "Invalid requestState: the token was altered, belongs to another request,"
            " or was sealed by another server"
        ) from None
    return orjson.loads(plain)


def _cipher(key: bytes) -> Any:
    # Imported on first use: only multi-round requests pay for loading the cipher.
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(hashlib.sha256(key).digest())
