"""What the browser tests, the screenshot script and the render benchmark share.

A real GiftGenius server in a subprocess, a static file server for the test host and the
top-level widget page, Debian's Chromium driven by Playwright (sync API), and `HostPage` /
`OpenAIPage`: a page showing the widget in the MCP Apps test host (`host/host.html`) or
top-level with the `window.openai` shim.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import http.server
import itertools
import json
import os
import random
import subprocess
import threading
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeVar
from urllib.parse import urlsplit

from playwright.sync_api import Browser, ConsoleMessage, Frame, Page, Playwright, expect, sync_playwright

from herald.client import connect_http
from tests.servers import giftgenius_http

HERE: Final = Path(__file__).resolve().parent
REPO: Final = HERE.parents[1]
HOST_DIR: Final = HERE / "host"
HOST_BUNDLE: Final = HOST_DIR / "dist" / "host.js"
SHIM_BUNDLE: Final = HOST_DIR / "dist" / "openai-shim.js"
CHROMIUM: Final = Path(os.environ.get("GIFTGENIUS_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS: Final = [
    "--no-sandbox",  # we run as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: Big enough for the cancel case's CSV of ~100,000 rows.
MAX_MESSAGE_BYTES: Final = 64 * 1024 * 1024
#: One bound for every wait on the page; a healthy run needs a fraction of it.
TIMEOUT_MS: Final = 20_000
#: The bound for a bulk job to end. Its time is the analysis's, not the page's: thousands of
#: rows take seconds alone, and tens of them under coverage on a busy two-core machine.
JOB_TIMEOUT_MS: Final = 120_000

Theme = Literal["light", "dark"]
T = TypeVar("T")


def missing_requirements() -> list[str]:
    """What the browser tests need and this machine lacks (`make browser-deps` provides it)."""
    missing = []
    if not CHROMIUM.exists():
        missing.append(f"Chromium at {CHROMIUM}")
    for bundle in (HOST_BUNDLE, SHIM_BUNDLE):
        if not bundle.exists():
            missing.append(f"the test host bundle {bundle.relative_to(REPO)}")
    return missing


# -- the server ----------------------------------------------------------------------------------


@dataclass
class GiftServer:
    """A `giftgenius serve` subprocess on a loopback port, with its own SQLite store."""

    port: int
    process: subprocess.Popen[bytes]
    store: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call a tool as another client would (a session of its own)."""

        async def call() -> dict[str, Any]:
            async with connect_http(self.url, listen=False) as client:
                return await client.call_tool(name, arguments)

        return run_async(call)

    def read_resource(self, uri: str) -> dict[str, Any]:
        async def read() -> dict[str, Any]:
            async with connect_http(self.url, listen=False) as client:
                return await client.request("resources/read", {"uri": uri})

        return run_async(read)

    def list_tools(self) -> list[dict[str, Any]]:
        async def tools() -> list[dict[str, Any]]:
            async with connect_http(self.url, listen=False) as client:
                listed: list[dict[str, Any]] = (await client.request("tools/list", {}))["tools"]
                return listed

        return run_async(tools)

    def job_status(self, job_id: str) -> dict[str, Any]:
        """The server's own word on a job (`get_job_status` structuredContent)."""
        result = self.call_tool("get_job_status", {"jobId": job_id})
        content: dict[str, Any] = result["structuredContent"]
        return content


@contextlib.contextmanager
def gift_server(store_dir: Path, *, port: int | None = None, measured: bool = True) -> Iterator[GiftServer]:
    """Start the server; at the end kill it and wait for it, whatever happened.

    Its store is `store_dir/jobs.db`: a server started again with the same `store_dir` and
    `port` is the same server after a restart (it takes over the jobs of the killed one once
    that one's lease, a second here, has lapsed). `measured`: see `tests.servers`.
    """
    store = (store_dir / "jobs.db").resolve()
    options = ("--max-message-bytes", str(MAX_MESSAGE_BYTES), "--job-lease", "1")
    with giftgenius_http(f"sqlite:///{store}", *options, port=port, kill=True, measured=measured) as served:
        yield GiftServer(served.port, served.process, store)


def run_async(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to the end on a thread of its own.

    Playwright's sync API keeps an event loop on the test's thread, so `asyncio.run` there
    would find it; a worker thread has none.
    """
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result(timeout=60)


# -- the static server ---------------------------------------------------------------------------


class StaticServer:
    """Files under `host/` at `/`, plus pages put in memory at their own paths (with headers)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pages: dict[str, tuple[bytes, dict[str, str]]] = {}
        handler = functools.partial(_Handler, self, directory=str(root))
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self.port: int = self._httpd.server_address[1]
        self.put("/favicon.ico", "", "image/x-icon")
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="static-server", daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def put(self, path: str, body: str, content_type: str, headers: dict[str, str] | None = None) -> str:
        self.pages[path] = (body.encode(), {"Content-Type": content_type, **(headers or {})})
        return self.origin + path

    def __enter__(self) -> StaticServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class _Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, static: StaticServer, *args: Any, **kwargs: Any) -> None:
        self.static = static
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        page = self.static.pages.get(urlsplit(self.path).path)
        if page is None:
            super().do_GET()
            return
        body, headers = page
        self.send_response(200)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self) -> None:
        """A file store's upload (the `window.openai` shim's `uploadFile`): kept until the end."""
        path = urlsplit(self.path).path
        if not path.startswith("/uploads/"):
            self.send_error(405)
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.static.pages[path] = (body, {"Content-Type": self.headers.get("Content-Type", "text/csv")})
        self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


# -- the browser ---------------------------------------------------------------------------------


@contextlib.contextmanager
def chromium() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            yield browser
        finally:
            browser.close()


def launch(playwright: Playwright) -> Browser:
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)


@dataclass
class Console:
    """What a page printed and threw; CSP refusals show up here as errors."""

    messages: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def attach(self, page: Page) -> None:
        page.on("console", self._message)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))

    def _message(self, message: ConsoleMessage) -> None:
        line = f"{message.type}: {message.text}"
        self.messages.append(line)
        if message.type == "error":
            self.errors.append(line)

    def csp_violations(self) -> list[str]:
        return [line for line in self.messages if "Content Security Policy" in line]


#: Runs first in every document of a context (the widget's srcdoc frame included): records CSP refusals.
#: On the window, since a srcdoc document may replace the first one in the same window.
CSP_RECORDER: Final = """
window.__cspViolations = window.__cspViolations || [];
window.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(`${e.effectiveDirective} blocked ${e.blockedURI || '(inline)'}`);
});
"""

VALUENOW_RECORDER: Final = """() => {
  // Every aria-valuenow the progress bar shows, in order: each attribute change's old value,
  // then the value now, per mutation batch; a bar inserted later is read when it appears.
  const seen = (window.__valuenow = []);
  const push = (value) => {
    if (value === null || value === undefined) return;
    const number = Number(value);
    if (seen.length === 0 || seen[seen.length - 1] !== number) seen.push(number);
  };
  const current = () => document.querySelector('[role=progressbar]')?.getAttribute('aria-valuenow');
  push(current());
  new MutationObserver((records) => {
    for (const record of records) {
      const bar = record.type === 'attributes' && record.target.matches?.('[role=progressbar]');
      if (bar) push(record.oldValue);
    }
    push(current());
  }).observe(document.documentElement, {
    subtree: true, childList: true, attributes: true,
    attributeFilter: ['aria-valuenow'], attributeOldValue: true,
  });
  return true;
}"""


class WidgetPage:
    """A page that shows the widget somewhere: in the test host's iframe, or top-level."""

    def __init__(self, page: Page, console: Console) -> None:
        self.page = page
        self.console = console

    @property
    def frame(self) -> Frame:
        raise NotImplementedError

    def record_valuenow(self) -> None:
        self.frame.evaluate(VALUENOW_RECORDER)

    def valuenow_history(self) -> list[float]:
        history: list[float] = self.frame.evaluate("() => window.__valuenow ?? []")
        return history

    def wait_for(self, expression: str, arg: Any = None, timeout: float = TIMEOUT_MS) -> Any:
        """Wait until `expression` (a function of `arg`) is truthy inside the widget's document."""
        return self.frame.wait_for_function(expression, arg=arg, timeout=timeout).json_value()

    def csp_violations(self) -> list[str]:
        """What the document's CSP refused (with the console's reports of the same)."""
        refused: list[str] = self.frame.evaluate("() => window.__cspViolations ?? []")
        return refused + self.console.csp_violations()

    def marks(self, name: str) -> list[float]:
        starts: list[float] = self.frame.evaluate(
            "(name) => performance.getEntriesByName(name, 'mark').map((m) => m.startTime)", name
        )
        return starts


class HostPage(WidgetPage):
    """The MCP Apps test host (`host/host.html`) in a page, showing one view."""

    def __init__(self, page: Page, console: Console, static: StaticServer, server: GiftServer) -> None:
        super().__init__(page, console)
        self.static = static
        self.server = server
        page.goto(f"{static.origin}/host.html")
        page.wait_for_function("() => window.testHost !== undefined", timeout=TIMEOUT_MS)

    @property
    def frame(self) -> Frame:
        frame = self.page.frame(name="widget")
        if frame is None:
            raise AssertionError("the host shows no widget iframe")
        return frame

    def run(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        theme: Theme = "light",
        chaos: bool = False,
        server_resources: bool = True,
        max_height: int = 2400,
        before_result: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        """Render `tool`'s view and deliver the call's result; return what `testHost.run` returned.

        `before_result` runs once the view has initialized and before the host sends it the
        tool's input and result (e.g. to install observers in the widget's document).
        """
        options = {
            "server": self.server.url,
            "tool": tool,
            "arguments": arguments,
            "theme": theme,
            "chaos": chaos,
            "serverResources": server_resources,
            "maxHeight": max_height,
            "gate": before_result is not None,
        }
        self.page.evaluate(
            "(o) => { window.__run = testHost.run(o); window.__run.catch(() => {}); }", options
        )
        if before_result is not None:
            self.page.wait_for_function(
                "() => testHost.initialized || testHost.status === 'error'", timeout=TIMEOUT_MS
            )
            self._raise_host_error()
            before_result()
            self.page.evaluate("() => testHost.openGate()")
        try:
            result: dict[str, Any] = self.page.evaluate("() => window.__run")
        except Exception:
            self._raise_host_error()
            raise
        return result

    def _raise_host_error(self) -> None:
        error = self.page.evaluate("() => testHost.error")
        if error:
            raise AssertionError(f"the test host failed: {error}")

    def host(self, expression: str, arg: Any = None) -> Any:
        """Evaluate `expression` (a function of `arg`, e.g. `() => testHost.calls`) in the host page."""
        return self.page.evaluate(expression, arg)

    def call_from_view(self, probe_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A `tools/call` posted from the view's own document, as a view's code would send
        it past the widget's client, and the JSON-RPC answer the host relays back."""
        answer: dict[str, Any] = self.frame.evaluate(
            """([id, name, args]) => new Promise((resolve) => {
              addEventListener('message', function listen(event) {
                if (event.data?.id !== id) return;
                removeEventListener('message', listen);
                resolve(event.data);
              });
              parent.postMessage({jsonrpc: '2.0', id, method: 'tools/call',
                                  params: {name, arguments: args}}, '*');
            })""",
            [probe_id, name, arguments],
        )
        return answer

    def violations(self) -> list[dict[str, Any]]:
        violations: list[dict[str, Any]] = self.host("() => testHost.violations")
        return violations

    def calls(self, source: str = "app") -> list[dict[str, Any]]:
        calls: list[dict[str, Any]] = self.host("(s) => testHost.calls.filter((c) => c.source === s)", source)
        return calls


class OpenAIPage(WidgetPage):
    """The widget's HTML as the top-level page, with the `window.openai` shim injected first."""

    def __init__(
        self,
        page: Page,
        console: Console,
        static: StaticServer,
        server: GiftServer,
        *,
        tool: str,
        arguments: dict[str, Any],
        theme: Theme = "light",
        preload: bool = False,
        tool_result: dict[str, Any] | None = None,
        widget_state: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(page, console)
        url = serve_widget_top_level(static, server, tool)
        config: dict[str, Any] = {
            "server": server.url,
            "tool": tool,
            "arguments": arguments,
            "theme": theme,
            "widgetState": widget_state,
        }
        if preload and tool_result is None:
            tool_result = server.call_tool(tool, arguments)
        if tool_result is not None:
            # As when ChatGPT renders a call that already finished: the globals start filled.
            config["toolResult"] = tool_result
        page.add_init_script(script=f"window.__openaiShimConfig = {json_for_script(config)};")
        page.add_init_script(path=SHIM_BUNDLE)
        page.goto(url)

    @property
    def frame(self) -> Frame:
        return self.page.main_frame

    def shim(self, expression: str, arg: Any = None) -> Any:
        return self.page.evaluate(expression, arg)


def json_for_script(value: Any) -> str:
    return json.dumps(value).replace("</", "<\\/")


def serve_widget_top_level(static: StaticServer, server: GiftServer, tool: str) -> str:
    """Read the tool's widget with a real `resources/read` and serve it as a page of its own.

    The page gets the policy ChatGPT would build from `openai/widgetCSP`, plus the MCP
    server's origin and the shim's file store in connect-src: in ChatGPT the bridge's calls
    and uploads leave through the host's postMessage channel, here the shim makes them from
    the page itself.
    """
    listed = {entry["name"]: entry for entry in server.list_tools()}
    uri = listed[tool].get("_meta", {}).get("openai/outputTemplate")
    if not isinstance(uri, str):
        raise AssertionError(f"tool {tool} declares no _meta['openai/outputTemplate']: no widget for ChatGPT")
    content = server.read_resource(uri)["contents"][0]
    csp = content.get("_meta", {}).get("openai/widgetCSP", {})
    resources = " ".join(csp.get("resource_domains", []))
    connect = " ".join([server.origin, static.origin, *csp.get("connect_domains", [])])
    frames = " ".join(csp.get("frame_domains", [])) or "'none'"
    policy = "; ".join(
        [
            "default-src 'none'",
            f"script-src 'self' 'unsafe-inline' {resources}".strip(),
            f"style-src 'self' 'unsafe-inline' {resources}".strip(),
            f"img-src 'self' data: {resources}".strip(),
            f"font-src 'self' {resources}".strip(),
            f"connect-src {connect}",
            f"frame-src {frames}",
            "base-uri 'self'",
            "object-src 'none'",
        ]
    )
    path = f"/openai/{uri.removeprefix('ui://').replace('/', '-')}"
    return static.put(path, content["text"], "text/html; charset=utf-8", {"Content-Security-Policy": policy})


# -- data ----------------------------------------------------------------------------------------

FIRST_NAMES: Final = [
    "Ada",
    "Blaise",
    "Cecilia",
    "Dmitri",
    "Edsger",
    "Frances",
    "Grace",
    "Hedy",
    "Ivan",
    "Joan",
    "Katherine",
    "Linus",
    "Margaret",
    "Niklaus",
    "Olga",
    "Pavel",
    "Quentin",
    "Radia",
    "Sophie",
    "Tim",
    "Ursula",
    "Vint",
    "Wanda",
    "Xavier",
    "Yukihiro",
    "Zelda",
    "Alonzo",
    "Barbara",
    "Claude",
    "Dorothy",
    "Emmy",
    "Fernando",
    "Gottfried",
    "Hopper",
    "Ingrid",
    "Jean",
    "Kurt",
    "Leslie",
    "Mary",
    "Noam",
    "Oskar",
    "Peter",
    "Rosalind",
    "Seymour",
    "Tove",
    "Uriel",
    "Valerie",
    "Whitfield",
    "Yvonne",
    "Zuse",
]
LAST_NAMES: Final = [
    "Abbott",
    "Bell",
    "Carver",
    "Dunn",
    "Ellis",
    "Fischer",
    "Gupta",
    "Hale",
    "Ibarra",
    "Jensen",
    "Kowalski",
    "Lindqvist",
    "Moreau",
    "Nakamura",
    "Okafor",
    "Petrov",
    "Quinn",
    "Rossi",
    "Sato",
    "Tanaka",
    "Underwood",
    "Varga",
    "Weber",
    "Xu",
    "Yilmaz",
    "Zhou",
    "Alvarez",
    "Brennan",
    "Castillo",
    "Dubois",
    "Eriksen",
    "Fontaine",
    "Garcia",
    "Horvat",
    "Iversen",
    "Jovanovic",
    "Kim",
    "Larsen",
    "Mendes",
    "Novak",
]
DEPARTMENTS: Final = ("Engineering", "Design", "Sales", "Finance", "People", "Support", "Legal", "Marketing")
INTERESTS: Final = [
    "cooking",
    "hiking",
    "coffee",
    "reading",
    "gardening",
    "music",
    "photography",
    "yoga",
    "travel",
    "chess",
    "cycling",
    "tea",
    "baking",
    "running",
    "painting",
    "camping",
    "board",
    "games",
    "wine",
    "fitness",
    "movies",
]


def people(count: int, *, seed: int = 7) -> list[tuple[str, str, str, str]]:
    """`count` distinct people: (name, department, interests, budget). No name is inside another."""
    names = [f"{first} {last}" for first, last in itertools.product(FIRST_NAMES, LAST_NAMES)]
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        base = names[index % len(names)]
        name = base if index < len(names) else f"{base} {index // len(names) + 1}"
        interests = ";".join(rng.sample(INTERESTS, rng.randint(1, 3)))
        budget = "" if index % 5 == 0 else str(rng.choice((25, 40, 50, 75, 100)))
        rows.append((name, DEPARTMENTS[index % len(DEPARTMENTS)], interests, budget))
    return rows


def employees_csv(count: int) -> str:
    lines = ["name,department,interests,budget"]
    lines += [",".join(row) for row in people(count)]
    return "\n".join(lines) + "\n"


# -- the MCP Apps host tests' shared steps and checks -------------------------------------


def assert_clean(host: HostPage) -> None:
    """No refused tool call, no CSP refusal, no uncaught error in the host or the widget."""
    assert host.violations() == []
    assert host.csp_violations() == []
    assert [line for line in host.console.errors if line.startswith("uncaught")] == []


def start_job(host: HostPage, csv: str, **options: Any) -> tuple[str, dict[str, Any]]:
    """Run the bulk tool in the host, recording aria-valuenow from before the first result."""
    result = host.run(
        "start_bulk_gift_analysis",
        {"csv": csv, "occasion": "holiday"},
        before_result=host.record_valuenow,
        **options,
    )
    job_id: str = result["toolResult"]["structuredContent"]["jobId"]
    expect(host.frame.locator(f"section.job[data-job-id='{job_id}']")).to_be_attached()
    return job_id, result


def non_decreasing(values: list[float]) -> bool:
    return all(earlier <= later for earlier, later in itertools.pairwise(values))


def polls(host: HostPage) -> list[dict[str, Any]]:
    """The view's `get_job_status` calls as the host recorded them, in order."""
    return [call for call in host.calls() if call.get("name") == "get_job_status"]
