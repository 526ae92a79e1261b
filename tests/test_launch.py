"""`herald.Server.run()` and `http_app()`: a developer's own server file, served for real.

The server below is what a developer writes: a lifespan, a plain `def` tool that takes a
part of it, and a plain `def` job. It runs as a subprocess over stdio (the official SDK's
client spawns it), over HTTP (`run("http")`), and mounted in a FastAPI app under uvicorn,
next to an ordinary route.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from herald.client import connect_http
from herald.testing import free_port, wait_until_listening

pytestmark = pytest.mark.slow  # real processes

SERVER = textwrap.dedent(
    """
    import contextlib
    import os
    import sys
    from typing import Annotated

    from herald import FromLifespan, Server, SyncJobContext
    from herald.server.middleware import timing

    MARKS = os.environ["LIFESPAN_MARKS"]


    def mark(text):
        with open(MARKS, "a") as marks:
            marks.write(text + "\\n")


    @contextlib.asynccontextmanager
    async def lifespan(server):
        mark(f"open {server.name} pid={os.getpid()}")
        yield {"greeting": "hello"}
        mark("close")


    server = Server("launch demo", lifespan=lifespan)
    server.add_middleware(timing())


    @server.resource("demo://motto", mime_type="text/plain")
    def motto() -> str:
        return "keep it exact"


    @server.prompt()
    def welcome(name: str) -> str:
        return f"Welcome {name}."


    @server.tool
    def greet(name: str, greeting: Annotated[str, FromLifespan("greeting")]) -> str:
        \"\"\"Greets someone, with the greeting the lifespan opened.\"\"\"
        return f"{greeting} {name}"


    @server.job
    def count(to: int, ctx: SyncJobContext) -> dict[str, int]:
        \"\"\"Counts, reporting each step.\"\"\"
        for step in range(1, to + 1):
            ctx.report_progress(100 * step / to, f"step {step}")
        return {"counted": to}


    if __name__ == "__main__":
        if sys.argv[1:2] == ["http"]:
            server.run("http", port=int(sys.argv[2]))
        else:
            server.run()
    """
)

FASTAPI_APP = textwrap.dedent(
    """
    import contextlib

    from fastapi import FastAPI

    from demo_server import server

    mcp_app = server.http_app(path="/mcp")
    app = FastAPI(lifespan=mcp_app.lifespan)


    @app.get("/hello")
    def hello():
        return {"hello": "world"}


    app.mount("/", mcp_app)


    @contextlib.asynccontextmanager
    async def both(host):
        async with mcp_app.lifespan(host):
            host.state.own = "ready"
            yield


    combined = FastAPI(lifespan=both)


    @combined.get("/own")
    def own():
        return {"own": combined.state.own}


    combined.mount("/", mcp_app)
    unstarted = FastAPI()
    unstarted.mount("/", mcp_app)
    """
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "demo_server.py").write_text(SERVER)
    (tmp_path / "fastapi_app.py").write_text(FASTAPI_APP)
    return tmp_path


def environment(project: Path) -> dict[str, str]:
    return {
        **os.environ,
        "LIFESPAN_MARKS": str(project / "marks.txt"),
        "XDG_DATA_HOME": str(project / "data"),
        "PYTHONPATH": str(project),
    }


def marks(project: Path) -> list[str]:
    return (project / "marks.txt").read_text().splitlines()


@pytest.fixture
def served(project: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The server as `request.param` says: `run("http")`, or an app of `fastapi_app` under uvicorn."""
    port = free_port()
    kind: str = request.param
    if kind == "run":
        argv = [sys.executable, str(project / "demo_server.py"), "http", str(port)]
    else:
        argv = [
            sys.executable,
            "-m",
            "uvicorn",
            f"fastapi_app:{kind}",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ]
    errors = (project / "stderr.txt").open("wb")
    process = subprocess.Popen(argv, cwd=project, env=environment(project), stderr=errors)
    try:
        wait_until_listening(port, process)
        yield f"http://127.0.0.1:{port}", process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
        errors.close()


async def a_job_runs_to_its_end(url: str) -> dict[str, Any]:
    async with connect_http(url + "/mcp") as client:
        greeting = await client.call_tool("greet", {"name": "Ada"})
        assert greeting["content"] == [{"type": "text", "text": "hello Ada"}]
        assert greeting["structuredContent"] == {"result": "hello Ada"}
        job_id = (await client.call_tool("count", {"to": 3}))["structuredContent"]["jobId"]
        kinds = [event.kind async for event in client.job_events(job_id)]
        assert kinds[-1] == "completed"
        assert kinds.count("progress") == 3
        return await client.job_status(job_id)


async def test_run_serves_stdio_to_the_official_client_and_keeps_jobs_in_a_file(project: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=[str(project / "demo_server.py")], cwd=project, env=environment(project)
    )
    async with Client(params, mode="legacy", read_timeout_seconds=30, cache=None) as client:
        greeting = await client.call_tool("greet", {"name": "Ada"})
        assert greeting.structured_content == {"result": "hello Ada"}
        started = await client.call_tool("count", {"to": 2})
        assert started.structured_content is not None
        job_id = started.structured_content["jobId"]
        status: dict[str, Any] = {}
        for _ in range(300):  # bounded: the job takes milliseconds
            status = (await client.call_tool("get_job_status", {"jobId": job_id})).structured_content or {}
            if status.get("status") == "completed":
                break
        assert status["status"] == "completed"
    store = project / "data" / "launch-demo" / "store.db"
    assert store.is_file(), "jobs are durable by default, in a file named after the server"
    assert marks(project)[0].startswith("open launch demo")
    assert marks(project)[-1] == "close", "the lifespan closed when the host closed stdio"


@pytest.mark.parametrize("served", ["run", "app", "combined"], indirect=True)
async def test_http_serves_jobs_and_runs_the_lifespan_once(
    served: tuple[str, subprocess.Popen[bytes]], project: Path, request: pytest.FixtureRequest
) -> None:
    url, process = served
    status = await a_job_runs_to_its_end(url)
    assert status["status"] == "completed"
    opened = [line for line in marks(project) if line.startswith("open")]
    assert opened == [f"open launch demo pid={process.pid}"], "once per process"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) in (0, -signal.SIGTERM), "uvicorn ends by its signal, once stopped"
    assert marks(project)[-1] == "close", "a polite stop closes the lifespan"
    store = project / "data" / "launch-demo" / "store.db"
    assert store.is_file(), "jobs are durable by default, mounted or not"
    said = (project / "stderr.txt").read_text()
    if request.node.callspec.params["served"] == "run":
        assert f"jobs are kept in {store}" in said, "run() says where at start"
    assert "Traceback" not in said


@pytest.mark.parametrize("served", ["app"], indirect=True)
async def test_a_mounted_app_leaves_the_host_routes_alone(
    served: tuple[str, subprocess.Popen[bytes]],
) -> None:
    url, _ = served
    async with httpx.AsyncClient() as http:
        assert (await http.get(url + "/hello")).json() == {"hello": "world"}


@pytest.mark.parametrize("served", ["combined"], indirect=True)
async def test_a_host_lifespan_of_its_own_runs_beside_the_mounted_one(
    served: tuple[str, subprocess.Popen[bytes]],
) -> None:
    url, _ = served
    async with httpx.AsyncClient() as http:
        assert (await http.get(url + "/own")).json() == {"own": "ready"}


@pytest.mark.parametrize("served", ["unstarted"], indirect=True)
async def test_a_mounted_app_whose_lifespan_never_ran_says_so(
    served: tuple[str, subprocess.Popen[bytes]], project: Path
) -> None:
    url, _ = served
    async with httpx.AsyncClient() as http:
        answer = await http.post(
            url + "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"accept": "application/json, text/event-stream"},
        )
    assert answer.status_code == 503
    assert "its app's lifespan did not run" in answer.json()["error"]["message"]
    said = (project / "stderr.txt").read_text()
    assert "FastAPI(lifespan=mcp_app.lifespan)" in said


@pytest.mark.parametrize("served", ["run"], indirect=True)
async def test_the_fastmcp_client_calls_plain_functions_through_middleware(
    served: tuple[str, subprocess.Popen[bytes]],
) -> None:
    from fastmcp import Client as FastMCPClient

    url, _ = served
    async with FastMCPClient(url + "/mcp") as client:
        greeting = await client.call_tool("greet", {"name": "Ada"})
        assert greeting.data == "hello Ada", "the wrapped result, unwrapped by the client's own reading"
        motto = await client.read_resource("demo://motto")
        assert motto[0].text == "keep it exact"
        prompt = await client.get_prompt("welcome", {"name": "Ada"})
        assert prompt.messages[0].content.text == "Welcome Ada."


async def test_run_reports_to_the_collector_the_otel_variables_name(project: Path) -> None:
    """A developer's own `server.run()` exports traces as the OpenTelemetry variables say,
    named after the server, with no telemetry code in the file."""
    from herald.client import connect_stdio
    from herald.testing.otlp import OtlpReceiver

    with OtlpReceiver() as receiver:
        env = environment(project) | receiver.environment()
        async with connect_stdio([sys.executable, str(project / "demo_server.py")], env=env) as client:
            await client.call_tool("greet", {"name": "Ada"})
        (span,) = receiver.wait_for("tools/call greet")
    assert span.service == "launch demo"
    assert span.attributes["network.transport"] == "pipe"
