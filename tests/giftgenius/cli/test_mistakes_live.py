"""Command line mistakes that need a process: a server to talk to, a port, a store, a signal.

Each case runs the real command as a subprocess, some against a real server, and checks
the status, the words that say what to do, and that no traceback reached the terminal.
The mistakes refused before any of that run in this process (`test_mistakes.py`).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from herald.testing import free_port
from tests.giftgenius.commands import GIFTGENIUS, WIDE, check, run
from tests.servers import ServedProcess, giftgenius_http

pytestmark = pytest.mark.slow  # the command line, in processes of its own


@pytest.fixture(scope="module")
def served() -> Iterator[ServedProcess]:
    with giftgenius_http("memory") as server:
        yield server


def test_max_message_bytes_with_url_is_explained(people: Path, served: ServedProcess) -> None:
    check(
        run("bulk", str(people), "--url", served.url, "--max-message-bytes", "9"),
        "the server at --url has its own",
    )


def test_a_url_with_the_wrong_path_says_where_mcp_is(served: ServedProcess) -> None:
    wrong = served.url.removesuffix("mcp")
    done = run("call", "suggest_gifts", "--url", wrong)
    check(done, f"{wrong} did not answer as an MCP endpoint", "HTTP 404", "/mcp")


def test_a_url_nobody_listens_on_names_it() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    check(run("read", "giftgenius://catalog", "--url", url), f"cannot reach an MCP server at {url}")


def test_an_unknown_tool_lists_the_tools(served: ServedProcess) -> None:
    check(run("call", "nope", "--url", served.url), "unknown tool 'nope'", "suggest_gifts")


def test_an_unknown_resource_lists_the_resources(served: ServedProcess) -> None:
    check(
        run("read", "giftgenius://nope", "--url", served.url),
        "cannot read giftgenius://nope",
        "giftgenius://catalog",
    )


def test_a_prompt_without_its_required_arguments_names_them(served: ServedProcess) -> None:
    done = run("prompt", "gift_congrats_style", "--url", served.url, "--arg", "recipient_name=Ana")
    check(done, "needs occasion", "--arg occasion=")


def test_a_prompt_argument_it_does_not_take_is_named(served: ServedProcess) -> None:
    done = run(
        "prompt",
        "gift_congrats_style",
        "--url",
        served.url,
        "-a",
        "recipient_name=A",
        "-a",
        "occasion=x",
        "-a",
        "mood=y",
    )
    check(done, "takes no mood", "recipient_name, occasion, tone")


def test_an_unknown_prompt_lists_the_prompts(served: ServedProcess) -> None:
    check(run("prompt", "nope", "--url", served.url), "unknown prompt 'nope'", "gift_congrats_style")


@pytest.mark.parametrize("command", ["status", "watch", "result"])
def test_an_unknown_job_id_is_said(command: str, served: ServedProcess, tmp_path: Path) -> None:
    done = run("job", command, "no-such-job", "--url", served.url, cwd=tmp_path)
    check(done, "knows no job 'no-such-job'")
    assert list(tmp_path.iterdir()) == []


def test_a_store_that_is_not_one_is_refused() -> None:
    check(run("serve", "--store", "bogus", "--quiet"), "unknown store 'bogus'", "sqlite:////absolute/path.db")


def test_a_taken_port_is_said_without_a_banner() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run("serve", "--port", str(port), "--store", "memory")
    check(done, f"port {port} is in use; pick another with --port")
    assert "is serving" not in done.stderr


def test_a_host_this_machine_does_not_have_is_said() -> None:
    check(
        run("serve", "--host", "192.0.2.1", "--port", str(free_port()), "--store", "memory"),
        "is not an address of this machine",
    )


def test_a_host_that_does_not_resolve_is_said() -> None:
    check(
        run("serve", "--host", "no-such-host.invalid", "--store", "memory"), "--host 'no-such-host.invalid'"
    )


def test_a_cors_wildcard_is_refused() -> None:
    done = run("serve", "--cors-origin", "*", "--store", "memory", "--port", str(free_port()))
    check(done, "--cors-origin cannot be '*'")


@pytest.mark.parametrize("host", ["http://gifts.example.com", "gifts.example.com/mcp", "*"])
def test_an_allowed_host_that_could_never_match_is_refused(host: str) -> None:
    done = run("serve", "--allow-host", host, "--store", "memory", "--port", str(free_port()))
    check(done, f"--allow-host {host!r} can never match a Host header")


def test_a_duration_that_is_not_one_is_refused() -> None:
    check(run("serve", "--retention", "a week", "--store", "memory"), "is not a duration")


def test_a_store_that_is_a_directory_is_refused(tmp_path: Path) -> None:
    check(run("serve", "--store", str(tmp_path), "--quiet", "--port", str(free_port())), "is a directory")


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_store_in_a_folder_that_is_not_there_is_refused_and_no_folder_made(
    tmp_path: Path, command: str
) -> None:
    folder = tmp_path / "typo" / "dir"
    port = ["--port", str(free_port())] if command == "serve" else []
    # A command that starts instead runs until the timeout, and fails the test.
    done = run(command, "--quiet", *port, "--store", str(folder / "gifts.db"), timeout=30)
    check(done, f"error: --store {folder / 'gifts.db'}: the directory {folder} does not exist")
    assert len(done.stderr.splitlines()) <= 2, done.stderr
    assert not (tmp_path / "typo").exists()


class _NotMcp(BaseHTTPRequestHandler):
    """What answers at some URLs: an OAuth gate, a JSON API, a web page in Windows-1252."""

    replies: ClassVar[dict[str, tuple[int, str, bytes]]] = {
        "/gate": (401, "application/json", b'{"error": "invalid_token"}'),
        "/api": (200, "application/json", b'{"ok": true}'),
        "/list": (200, "application/json", b"[1, 2]"),
        "/page": (200, "text/html", "<p>Caf\u00e9</p>".encode("cp1252")),
    }

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        status, kind, body = self.replies.get(self.path, (404, "text/plain", b"Not Found"))
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture(scope="module")
def not_mcp() -> Iterator[str]:
    site = ThreadingHTTPServer(("127.0.0.1", 0), _NotMcp)
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{site.server_address[1]}"
    finally:
        site.shutdown()
        thread.join()


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/gate", "HTTP 401"),
        ("/api", "not a JSON-RPC message"),
        ("/list", "not a JSON-RPC message"),
        ("/page", "Caf"),
        ("/missing", "HTTP 404"),
    ],
)
def test_a_server_that_does_not_speak_mcp_is_said(path: str, words: str, not_mcp: str) -> None:
    url = not_mcp + path
    check(
        run("call", "suggest_gifts", "--url", url, "--show-wire"),
        f"{url} did not answer as an MCP endpoint",
        words,
    )


def test_ctrl_c_in_the_terminal_cancels_a_job_of_the_private_server(tmp_path: Path) -> None:
    """Ctrl-C signals the whole foreground group; the private server must outlive it to be asked."""
    from tests.giftgenius.test_bulk_job import employees

    people = tmp_path / "people.csv"
    people.write_text(employees(30_000))
    bulk = subprocess.Popen(
        [*GIFTGENIUS, "bulk", str(people)],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, as a terminal's foreground job has
        env=WIDE,
    )
    assert bulk.stderr is not None
    for line in bulk.stderr:
        if " started" in line:
            break
    os.killpg(bulk.pid, signal.SIGINT)
    rest = bulk.stderr.read()
    assert bulk.wait(timeout=60) == 130, rest
    assert "Cancelled." in rest
    assert "Traceback" not in rest


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--auth-issuer", "https://login.example.com"], "--auth-issuer and --auth-audience go together"),
        (["--auth-scope", "gifts"], "need --auth-issuer"),
        (
            ["--auth-issuer", "http://login.example.com", "--auth-audience", "https://gifts.example.com/mcp"],
            "must use https",
        ),
        (
            ["--auth-issuer", "https://login.example.com", "--auth-audience", "gifts.example.com"],
            "must be an absolute https URL",
        ),
        (
            [
                "--stdio",
                "--auth-issuer",
                "https://login.example.com",
                "--auth-audience",
                "https://g.example/mcp",
            ],
            "a stdio server has no tokens to check",
        ),
        (
            [
                "--auth-issuer",
                "https://login.example.com",
                "--auth-audience",
                "https://g.example/mcp",
                "--auth-introspection",
                "https://login.example.com/introspect",
            ],
            "needs --auth-client-id and --auth-client-secret",
        ),
    ],
    ids=["issuer-alone", "scope-alone", "http-issuer", "audience-not-a-url", "stdio", "introspection-alone"],
)
def test_authentication_flags_that_do_not_add_up(flags: list[str], words: str) -> None:
    check(run("serve", *flags, "--store", "memory", "--port", str(free_port())), words)


def banner(*flags: str) -> str:
    """What `serve` says at start on every interface, up to its last line."""
    argv = [
        *GIFTGENIUS,
        "serve",
        "--host",
        "0.0.0.0",
        "--port",
        str(free_port()),
        "--store",
        "memory",
        *flags,
    ]
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        said = ""
        while "connect a client" not in said:
            line = process.stderr.readline()
            assert line, said
            said += line
    finally:
        process.terminate()
        process.wait(timeout=15)
    return said


def test_every_interface_without_authentication_is_warned_about() -> None:
    said = banner()
    assert "warning: no authentication on 0.0.0.0" in said
    assert "read or cancel any job whose id they learn" in said
    assert "refused (403) until you name it" in said


def test_a_protected_server_on_every_interface_says_who_may_call_it() -> None:
    said = banner(
        *("--allow-host", "gifts.example.com", "--auth-issuer", "https://login.example.com"),
        *("--auth-audience", "https://gifts.example.com/mcp"),
    )
    assert "warning" not in said
    assert "for clients that reach it as localhost, gifts.example.com" in said
    assert "needs an access token from https://login.example.com for https://gifts.example.com/mcp" in said
