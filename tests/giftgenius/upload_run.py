"""One bulk analysis from an upload, against a server process, timed and weighed.

What the memory test and `bench/bulk_throughput.py` share: the employee file sent in
parts as the widget and `giftgenius bulk` send it, the job followed to its end over its
event stream, the result read back whole as a widget reads it; and the server's resident
memory over all that, from Linux's peak counter (`VmHWM`), which is reset between the
phases so each is weighed on its own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from herald.client import connect_http
from herald.server.uploads import SEND_PART_TOOL, encoded_parts


def resident(pid: int, field: str = "VmRSS") -> int:
    """A process's resident memory (`VmRSS`) or its peak since the last reset (`VmHWM`), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise LookupError(field)


def reset_peak(pid: int) -> None:
    """Start `VmHWM` afresh from the current resident memory (Linux 4.0 and later)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


@dataclass
class UploadRun:
    """How one run went: seconds from the start call, and the server's peaks over idle."""

    people: int
    sent: float
    done: float
    read: float
    idle: int
    job_peak: int
    read_peak: int

    @property
    def rows_per_second(self) -> float:
        return self.people / self.read


async def run_upload(url: str, pid: int, data: bytes) -> UploadRun:
    """Send `data` as the employee file, follow the job, read its result; weigh the server."""
    idle = resident(pid)
    reset_peak(pid)
    async with connect_http(url) as client:
        began = time.perf_counter()
        upload = {"size": len(data), "file_name": "employees.csv", "mime_type": "text/csv"}
        started = await client.call_tool("start_bulk_gift_analysis", {"upload": upload})
        job_id = started["structuredContent"]["jobId"]
        for part in encoded_parts(data):
            answer = await client.call_tool(SEND_PART_TOOL, {"jobId": job_id, **part})
            if answer.get("isError"):
                raise AssertionError(answer)
        sent = time.perf_counter() - began
        async for event in client.job_events(job_id):
            if event.kind in ("failed", "cancelled"):
                raise AssertionError(f"the job {event.kind}: {event.payload}")
        done = time.perf_counter() - began
        job_peak = resident(pid, "VmHWM")
        reset_peak(pid)
        read = await client.request("resources/read", {"uri": f"herald://jobs/{job_id}/result.json"})
        finished = time.perf_counter() - began
        read_peak = resident(pid, "VmHWM")
    document = orjson.loads(read["contents"][0]["text"])
    return UploadRun(
        people=len(document["people"]),
        sent=sent,
        done=done,
        read=finished,
        idle=idle,
        job_peak=job_peak - idle,
        read_peak=read_peak - idle,
    )
