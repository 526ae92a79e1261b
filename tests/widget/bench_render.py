"""How long the widget takes from receiving a tool result to drawing its cards (`make bench-widget`).

Renders `suggest_gifts` in the MCP Apps test host N times (a fresh page each time) and
measures, inside the widget's document, the time between its two performance marks:
`giftgenius:tool-result` (the result arrived) and `giftgenius:cards-drawn` (the cards are in
the DOM). Prints JSON: the median, min, max and every sample, in milliseconds, and the
widget's size beside that of the official ext-apps `App` class bundled alone the same way
(esbuild, minified), which is what a widget built on it would carry.
Run: `.venv/bin/python tests/widget/bench_render.py [--runs 20]` (or `-m tests.widget.bench_render`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a file, not with -m: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from playwright.sync_api import expect

from tests.widget.support import (
    CSP_RECORDER,
    HOST_DIR,
    REPO,
    Console,
    HostPage,
    StaticServer,
    chromium,
    gift_server,
    missing_requirements,
)

COUNT = 20  # the most suggestions one call returns: the heaviest render
SUGGEST = {"occasion": "birthday", "budget": 500, "recipient": "loves cooking, coffee, hiking and music"}


def sizes() -> dict[str, int]:
    """Bytes of the widget and of the official `App` class alone, raw and gzipped."""
    widget = (REPO / "src" / "giftgenius" / "widget" / "gifts.html").read_bytes()
    esbuild = HOST_DIR / "node_modules" / ".bin" / "esbuild"
    entry = 'import { App } from "@modelcontextprotocol/ext-apps"; globalThis.App = App;'
    bundled = subprocess.run(
        [str(esbuild), "--bundle", "--minify", "--format=iife", "--platform=browser"],
        input=entry.encode(),
        cwd=HOST_DIR,  # stdin's imports resolve from here
        capture_output=True,
        check=True,
    ).stdout
    return {
        "widget_bytes": len(widget),
        "widget_gzip_bytes": len(gzip.compress(widget, 9)),
        "official_app_class_bytes": len(bundled),
        "official_app_class_gzip_bytes": len(gzip.compress(bundled, 9)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    runs: int = parser.parse_args().runs
    if runs < 1:
        parser.error("--runs must be at least 1")
    missing = missing_requirements()
    if missing:
        print(f"the benchmark needs {', '.join(missing)}: run `make browser-deps`", file=sys.stderr)
        return 2
    samples: list[float] = []
    drawn = 0
    with (
        tempfile.TemporaryDirectory() as store,
        gift_server(Path(store)) as server,
        StaticServer(HOST_DIR) as static,
        chromium() as browser,
    ):
        for _ in range(runs):
            context = browser.new_context(viewport={"width": 800, "height": 900})
            context.add_init_script(script=CSP_RECORDER)
            page = context.new_page()
            host = HostPage(page, Console(), static, server)
            result = host.run("suggest_gifts", {**SUGGEST, "count": COUNT})
            drawn = len(result["toolResult"]["structuredContent"]["gifts"])
            expect(host.frame.locator("li.gift-card")).to_have_count(drawn)
            host.wait_for("() => performance.getEntriesByName('giftgenius:cards-drawn', 'mark').length > 0")
            received = host.marks("giftgenius:tool-result")
            painted = host.marks("giftgenius:cards-drawn")
            samples.append(painted[0] - received[0])
            context.close()
    report = {
        "metric": "tool-result to cards drawn",
        "unit": "ms",
        "runs": runs,
        "gifts": drawn,
        "median": round(statistics.median(samples), 2),
        "min": round(min(samples), 2),
        "max": round(max(samples), 2),
        "samples": [round(sample, 2) for sample in samples],
        **sizes(),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
