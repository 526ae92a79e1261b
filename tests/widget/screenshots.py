"""Screenshots of the GiftGenius widget, as a person sees it in an MCP Apps host (`make screenshots`).

Writes docs/widget-gifts-{light,dark}.png (suggestions as cards),
docs/widget-job-{light,dark}.png (a bulk analysis while it runs: the live bar, stage, ETA
and Cancel) and docs/widget-results-{light,dark}.png (a finished analysis with everyone's
gifts), using the same test host, real server and Chromium as the browser tests. Run from the repository
root: `.venv/bin/python tests/widget/screenshots.py [--out DIR]` (or `-m tests.widget.screenshots`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a file, not with -m: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from playwright.sync_api import Browser, expect

from tests.widget.support import (
    CSP_RECORDER,
    HOST_DIR,
    JOB_TIMEOUT_MS,
    REPO,
    Console,
    GiftServer,
    HostPage,
    StaticServer,
    Theme,
    chromium,
    employees_csv,
    gift_server,
    missing_requirements,
)

GIFTS = 4
#: Big enough that the job is still running when the shot is taken (about 9 s on 2 cores).
RUNNING_PEOPLE = 100_000
SUGGEST = {
    "occasion": "birthday",
    "budget": 60,
    "recipient": "loves cooking, coffee and hiking",
    "count": GIFTS,
}


def shoot(browser: Browser, static: StaticServer, server: GiftServer, out: Path, theme: Theme) -> list[Path]:
    written = []
    for view in ("gifts", "job", "results"):
        context = browser.new_context(
            viewport={"width": 760, "height": 900}, device_scale_factor=2, color_scheme=theme
        )
        context.add_init_script(script=CSP_RECORDER)
        page = context.new_page()
        console = Console()
        console.attach(page)
        host = HostPage(page, console, static, server)
        if theme == "dark":
            page.evaluate("() => document.body.classList.add('dark')")
        if view == "gifts":
            host.run("suggest_gifts", SUGGEST, theme=theme)
            expect(host.frame.locator("li.gift-card")).to_have_count(GIFTS)
        elif view == "job":
            arguments = {"csv": employees_csv(RUNNING_PEOPLE), "occasion": "holiday"}
            host.run("start_bulk_gift_analysis", arguments, theme=theme)
            bar = host.frame.locator("[role=progressbar]")
            valuenow = "document.querySelector('[role=progressbar]')?.getAttribute('aria-valuenow')"
            host.frame.wait_for_function(f"() => Number({valuenow}) >= 30", timeout=60_000)
            expect(host.frame.locator("section.job")).to_have_attribute("data-status", "running")
            expect(bar).to_be_visible()
        else:
            # A host that caps the height (as chat hosts do): the results scroll inside the view.
            arguments = {"csv": employees_csv(120), "occasion": "holiday"}
            host.run("start_bulk_gift_analysis", arguments, theme=theme, max_height=1100)
            expect(host.frame.locator("section.job")).to_have_attribute(
                "data-status", "completed", timeout=JOB_TIMEOUT_MS
            )
            expect(host.frame.locator("section.job-results .person").first).to_be_visible()
        # The host sizes the iframe from the view's size-changed notifications: wait until it fits.
        page.wait_for_function(
            """() => {
              const frame = document.getElementById('widget');
              const last = testHost.sizes.at(-1);
              return last !== undefined && Math.abs(frame.clientHeight - last.height) < 2;
            }"""
        )
        # Chromium paints an out-of-process iframe only inside the viewport: make the viewport hold it all.
        height = page.evaluate(
            "() => Math.ceil(document.getElementById('widget').getBoundingClientRect().bottom)"
        )
        page.set_viewport_size({"width": 760, "height": height + 16})
        # Two frames inside the widget, so what the resize exposed is painted before the shot.
        host.frame.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
        path = out / f"widget-{view}-{theme}.png"
        page.locator("#widget").screenshot(path=str(path), animations="disabled")
        written.append(path)
        context.close()
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs", help="where the PNGs go (default: docs/)")
    out: Path = parser.parse_args().out
    missing = missing_requirements()
    if missing:
        print(f"screenshots need {', '.join(missing)}: run `make browser-deps`", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory() as store,
        gift_server(Path(store)) as server,
        StaticServer(HOST_DIR) as static,
        chromium() as browser,
    ):
        themes: tuple[Theme, ...] = ("light", "dark")
        for theme in themes:
            for path in shoot(browser, static, server, out, theme):
                print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
