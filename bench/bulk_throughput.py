"""The bulk gift analysis from an upload to its result: rows per second, and memory.

For each size, starts `giftgenius serve` over HTTP on a fresh SQLite file, makes a CSV of
that many varied people (`tests/giftgenius/staff.py`, about 100 bytes a row), sends it in
parts as the widget does, follows the job over its event stream and reads the result
back whole; then reports the rows per second over the whole of that, when the file was
in, when the job ended, and the server's peak resident memory over idle while the job
ran and while its result was read.

  python bench/bulk_throughput.py [--rows 2000 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests/

from tests.giftgenius.staff import staff_csv
from tests.giftgenius.upload_run import UploadRun, run_upload
from tests.servers import giftgenius_http

MB = 1024 * 1024


def measure(rows: int) -> UploadRun:
    data = staff_csv(rows).encode()
    with (
        tempfile.TemporaryDirectory() as folder,
        giftgenius_http(f"sqlite:///{folder}/jobs.db", measured=False) as served,
    ):
        return asyncio.run(run_upload(served.url, served.process.pid, data))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[2_000, 100_000])
    sizes: list[int] = parser.parse_args().rows
    print("| rows | rows/s, upload to result | file in | job ended | result read | job peak | read peak |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for rows in sizes:
        run = measure(rows)
        print(
            f"| {rows:,} | {run.rows_per_second:,.0f} | {run.sent:.2f} s | {run.done:.2f} s "
            f"| {run.read:.2f} s | {run.job_peak / MB:.0f} MB | {run.read_peak / MB:.0f} MB |",
            flush=True,
        )


if __name__ == "__main__":
    main()
