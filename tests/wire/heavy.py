"""An upstream for `herald record --upstream` that takes and sends what a recorder must not hold.

    python tests/wire/heavy.py --port P

- `POST /sink` reads a body of any size to its end, keeping nothing, and answers with its size;
- `GET /long-event?mib=N` is an event stream whose first event is N MiB of `data:` lines
  (its blank line comes only after all of them), and whose second is a small message;
- `GET /broken` is an event stream whose one chunk holds an event that is not UTF-8 and a
  valid event after it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any
from urllib.parse import parse_qs

#: One line of `/long-event`: 64 KiB of data.
DATA_LINE = b"data: " + b"x" * (64 * 1024 - 7) + b"\n"
#: What follows the long event.
SMALL_EVENT = b'id: 2\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"after"}}\n\n'
#: The one chunk of `/broken`: an event with a byte that is not UTF-8, then a valid one.
BROKEN_CHUNK = (
    b'id: 1\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"\xff"}}\n\n'
    + SMALL_EVENT
)

Scope = dict[str, Any]


async def app(scope: Scope, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    path, method = scope["path"], scope["method"]
    if method == "POST" and path == "/sink":
        size = 0
        while True:
            part = await receive()
            size += len(part.get("body", b""))
            if not part.get("more_body"):
                break
        answer = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"received": size}}).encode()
        await _start(send, "application/json")
        await send({"type": "http.response.body", "body": answer})
    elif method == "GET" and path == "/long-event":
        mib = int(parse_qs(scope["query_string"].decode())["mib"][0])
        await _start(send, "text/event-stream")
        await send({"type": "http.response.body", "body": b"id: 1\n", "more_body": True})
        for _ in range(mib * 16):
            await send({"type": "http.response.body", "body": DATA_LINE, "more_body": True})
        await send({"type": "http.response.body", "body": b"\n" + SMALL_EVENT})
    elif method == "GET" and path == "/broken":
        await _start(send, "text/event-stream")
        await send({"type": "http.response.body", "body": BROKEN_CHUNK})
    else:
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def _start(send: Any, content_type: str) -> None:
    headers = [(b"content-type", content_type.encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    options = parser.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning", lifespan="off")


if __name__ == "__main__":
    main()
