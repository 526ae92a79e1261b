"""The Host and Origin rules, read as strictly as a proxy or a browser would mean them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from herald.protocol.hosts import (
    LOOPBACK_HOSTS,
    HostAllowList,
    HostRefused,
    check_host_and_origin,
    split_host,
)

LOCAL = HostAllowList.parse(LOOPBACK_HOSTS)


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("localhost", ("localhost", None)),
        ("LOCALHOST:8000", ("localhost", 8000)),
        ("127.0.0.1:65535", ("127.0.0.1", 65535)),
        ("[::1]:8000", ("[::1]", 8000)),
        ("example.com.", ("example.com", None)),
    ],
)
def test_hosts_that_are_hosts(value: str, parsed: tuple[str, int | None]) -> None:
    assert split_host(value) == parsed


@pytest.mark.parametrize(
    "value",
    [
        "127.0.0.1:8000@evil.example.com",  # userinfo: a client meant evil.example.com
        "user@127.0.0.1",
        "[::1]junk",
        "[::1]:8000x",
        "127.0.0.1:",
        "127.0.0.1:0",
        "127.0.0.1:70000",
        "",
        "a b",
        "http://127.0.0.1",
        "127.0.0.1/mcp",
    ],
)
def test_hosts_that_are_not(value: str) -> None:
    assert split_host(value) is None


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"host": "127.0.0.1:8000"}, None),
        ({"host": "LocalHost:8000"}, None),  # names are not case-sensitive
        ({"host": "127.0.0.1:8000@evil.example.com"}, 400),
        ({"host": "[::1]junk"}, 400),
        ({"host": "evil.example.com"}, 403),
        ({"host": "127.0.0.1:8000", "origin": "http://localhost:6274"}, None),
        ({"host": "127.0.0.1:8000", "origin": "null"}, 403),
        ({"host": "127.0.0.1:8000", "origin": "http://evil.example.com"}, 403),
        ({"host": "127.0.0.1:8000", "origin": "http://localhost.evil.example.com"}, 403),
        ({"host": "127.0.0.1:8000", "origin": "http://localhost:6274/path"}, 403),
    ],
)
def test_host_and_origin(headers: dict[str, str], status: int | None) -> None:
    if status is None:
        check_host_and_origin(headers, LOCAL)
        return
    with pytest.raises(HostRefused) as refused:
        check_host_and_origin(headers, LOCAL)
    assert refused.value.http_status == status


def test_an_absolute_form_target_names_the_host_meant() -> None:
    check_host_and_origin({"host": "127.0.0.1"}, LOCAL, target_authority="127.0.0.1:8000")
    with pytest.raises(HostRefused) as refused:
        check_host_and_origin({"host": "127.0.0.1"}, LOCAL, target_authority="evil.example.com")
    assert refused.value.http_status == 403


def test_allow_list_entries() -> None:
    allowed = HostAllowList.parse(["gifts.example.com", "Other.Test:8443", "*.tunnel.example", "fe80::1"])
    assert allowed.allows("gifts.example.com", 443)
    assert allowed.allows("other.test", 8443)
    assert not allowed.allows("other.test", 8000), "a port listed is the only port allowed"
    assert allowed.allows("abc.tunnel.example", None)
    assert not allowed.allows("tunnel.example", None), "*.domain is for its subdomains"
    assert not allowed.allows("abc.tunnel.example.evil", None)
    assert allowed.allows("[fe80::1]", 80)


@pytest.mark.parametrize(
    "entry", ["http://gifts.example.com", "gifts.example.com/mcp", "*", "*.", "a b", "x:99999"]
)
def test_allow_list_entries_that_could_never_match_are_refused(entry: str) -> None:
    with pytest.raises(ValueError, match="can never match"):
        HostAllowList.parse([entry])


def test_the_cors_pattern_admits_what_the_check_admits() -> None:
    import re

    allowed = HostAllowList.parse(["gifts.example.com", "other.test:8443", "*.tunnel.example"])
    pattern = re.compile(allowed.cors_pattern())
    assert pattern.fullmatch("https://gifts.example.com")
    assert pattern.fullmatch("http://gifts.example.com:8000")
    assert pattern.fullmatch("https://other.test:8443")
    assert not pattern.fullmatch("https://other.test:8000")
    assert pattern.fullmatch("https://a.tunnel.example")
    assert not pattern.fullmatch("https://tunnel.example")
    assert not pattern.fullmatch("https://gifts.example.com.evil.test")


@given(st.text(max_size=40))
def test_any_host_header_is_allowed_or_refused_never_an_exception(value: str) -> None:
    status = None
    try:
        check_host_and_origin({"host": value}, LOCAL)
    except HostRefused as refused:
        status = refused.http_status
    assert status in (None, 400, 403)
    parsed = split_host(value)
    assert (status is None) == (parsed is not None and parsed[0] in LOCAL.names)
