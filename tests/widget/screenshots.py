"""Screenshots of the GiftGenius widget, as a person sees it in an MCP Apps host (`make screenshots`).

Writes docs/widget-gifts-{light,dark}.png (suggestions as cards),
docs/widget-job-{light,dark}.png (a bulk analysis while it runs: the live bar, stage, ETA
and Cancel), docs/widget-results-{light,dark}.png (a finished analysis with everyone's
gifts), docs/widget-form-{light,dark}.png (the form with a file picked),
docs/widget-upload-{light,dark}.png (an analysis of a file the widget sent: its file step
done, the rest under way) and docs/widget-fullscreen-{light,dark}.png (a result opened
full screen), using the same test host, real server and Chromium as the browser tests. Run from the repository
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


def pick_file(host: HostPage, folder: Path, people: int, *, start: bool, theme: Theme) -> None:
    """Open the bulk form, choose a CSV of `people`, and start the analysis if `start`
    (the file must stay in `folder` until the widget has sent it)."""
    source = folder / f"{people}" / "employees.csv"
    source.parent.mkdir(exist_ok=True)
    source.write_text(employees_csv(people), encoding="utf-8")
    host.run("open_bulk_gift_form", {"occasion": "birthday"}, theme=theme)
    host.frame.locator("#bulk-file").set_input_files(str(source))
    expect(host.frame.locator(".drop-file")).to_contain_text("employees.csv")
    if start:
        host.frame.get_by_role("button", name="Start the analysis").click()


def shoot(
    browser: Browser, static: StaticServer, server: GiftServer, out: Path, theme: Theme, files: Path
) -> list[Path]:
    written = []
    for view in ("gifts", "job", "results", "form", "upload", "fullscreen"):
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
        elif view == "form":
            pick_file(host, files, 2_000, start=False, theme=theme)
        elif view == "upload":
            # The file went in parts, its step is done, and the analysis runs on in the same bar.
            pick_file(host, files, RUNNING_PEOPLE, start=True, theme=theme)
            valuenow = "document.querySelector('[role=progressbar]')?.getAttribute('aria-valuenow')"
            host.frame.wait_for_function(f"() => Number({valuenow}) >= 30", timeout=60_000)
            expect(host.frame.locator("section.job")).to_have_attribute("data-status", "running")
        elif view == "fullscreen":
            page.set_viewport_size({"width": 1100, "height": 760})
            pick_file(host, files, 2_000, start=True, theme=theme)
            expect(host.frame.locator("section.job")).to_have_attribute(
                "data-status", "completed", timeout=JOB_TIMEOUT_MS
            )
            host.frame.get_by_role("button", name="Full screen").click()
            page.wait_for_function("() => testHost.displayModeRequests.includes('fullscreen')")
            host.frame.evaluate(
                "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"
            )
            path = out / f"widget-{view}-{theme}.png"
            page.screenshot(path=str(path), animations="disabled")
            written.append(path)
            context.close()
            continue
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
            for path in shoot(browser, static, server, out, theme, Path(store)):
                print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
