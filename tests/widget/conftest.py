"""Fixtures for the widget's browser tests: a real server, a static server, Chromium.

One server, one static server and one browser serve the whole session; every test gets a
fresh browser context and page. Without Chromium or the test host's bundle the tests are
skipped (run `make browser-deps`), except under CI=true, where that is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.widget.support import (
    CSP_RECORDER,
    HOST_DIR,
    TIMEOUT_MS,
    Console,
    GiftServer,
    HostPage,
    StaticServer,
    chromium,
    gift_server,
    missing_requirements,
)

# A healthy run needs a fraction of this; one bound for expect() and for the page's own waits.
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="session")
def browser_requirements() -> None:
    missing = missing_requirements()
    if not missing:
        return
    reason = f"the browser tests need {', '.join(missing)}: run `make browser-deps`"
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GiftServer]:
    with gift_server(tmp_path_factory.mktemp("widget-store")) as running:
        yield running


@pytest.fixture(scope="session")
def static(browser_requirements: None) -> Iterator[StaticServer]:
    with StaticServer(HOST_DIR) as serving:
        yield serving


@pytest.fixture(scope="module")
def browser(browser_requirements: None) -> Iterator[Browser]:
    # Per module, not per session: Playwright's sync API keeps its event loop marked running on
    # this thread while it is started, which would break the asyncio tests collected after these.
    with chromium() as launched:
        yield launched


@pytest.fixture
def console() -> Console:
    return Console()


@pytest.fixture
def page(browser: Browser, console: Console, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 800, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(script=CSP_RECORDER)
    opened = context.new_page()
    console.attach(opened)
    try:
        yield opened
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            _keep_evidence(opened, console, request.node.name)
        context.close()


def _keep_evidence(page: Page, console: Console, name: str) -> None:
    """On failure: a screenshot and the console, under the pytest temp dir's `widget-failures`."""
    where = Path(os.environ.get("WIDGET_FAILURES", "/tmp/widget-failures"))
    where.mkdir(parents=True, exist_ok=True)
    try:
        page.screenshot(path=str(where / f"{name}.png"), full_page=True)
    except Exception as problem:  # the page may be gone; the log still helps
        console.messages.append(f"(no screenshot: {problem})")
    (where / f"{name}.log").write_text("\n".join(console.messages) + "\n")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report


@pytest.fixture
def host(page: Page, console: Console, static: StaticServer, server: GiftServer) -> HostPage:
    return HostPage(page, console, static, server)
