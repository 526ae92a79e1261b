"""What a token's claims must say, however they were read: from a JWT, or by introspection.

A claim is the issuer's word, but the issuer may be misconfigured, or its tokens minted by
hand: a claim of the wrong type (`scope: 5`, `aud: {...}`, `scp: [1]`) refuses the token
with a description naming the claim, rather than being coerced into something it did not
say. `aud` is checked here for both kinds of token, so a JWT and an introspection answer
mean the same by "for this server": the audience as configured, with or without a
trailing slash (RFC 8707).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from herald.auth.config import AuthConfig
from herald.auth.verifier import InvalidToken
from herald.server.principal import Principal


def check_audience(config: AuthConfig, claims: Mapping[str, Any]) -> None:
    """Refuse a token whose `aud` (a string, or a list of strings) does not name this server."""
    audiences = _strings(claims, "aud", "a string or a list of strings")
    wanted = config.canonical_audience
    if wanted not in (audience.rstrip("/") for audience in audiences):
        raise InvalidToken(f"the token was issued for another resource, not {wanted}")


def principal_of(issuer: str, claims: Mapping[str, Any]) -> Principal:
    """Who the claims name (`sub`, else the client's id) and the scopes they grant.

    Scopes are `scope`, a space-separated string (RFC 9068, RFC 7662), or else `scp`, which
    some issuers send as a string and others as a list of strings.
    """
    subject = _string(claims, "sub") or _string(claims, "client_id")
    if not subject:
        raise InvalidToken("the token names no subject ('sub') or client ('client_id')")
    if claims.get("scope") is not None:
        scopes = _string(claims, "scope", "a string of space-separated scopes").split()
    else:
        scopes = [
            scope
            for each in _strings(claims, "scp", "a string or a list of strings")
            for scope in each.split()
        ]
    return Principal(issuer, subject, frozenset(scopes), claims=dict(claims))


def number_of(claims: Mapping[str, Any], name: str) -> float | None:
    """The claim `name`, a number such as `exp` (seconds since the epoch); None if absent (or null)."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidToken(f"the token's {name!r} claim is {_json_type(value)}, not a number")
    return value


def _string(claims: Mapping[str, Any], name: str, shape: str = "a string") -> str:
    """The claim `name`, "" if absent (or null)."""
    value = claims.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidToken(f"the token's {name!r} claim is {_json_type(value)}, not {shape}")
    return value


def _strings(claims: Mapping[str, Any], name: str, shape: str) -> list[str]:
    """The claim `name`, a string or a list of strings, as a list ([] if absent or null)."""
    value = claims.get(name)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        for each in value:
            if not isinstance(each, str):
                raise InvalidToken(f"the token's {name!r} claim holds {_json_type(each)}, not {shape}")
        return value
    raise InvalidToken(f"the token's {name!r} claim is {_json_type(value)}, not {shape}")


def _json_type(value: object) -> str:
    """What `value` is, as JSON would call it ("a number", "an object")."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else "null"
