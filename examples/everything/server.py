"""The conformance fixture: one herald server exposing every item the MCP conformance
harness exercises, for both protocol eras (handshake era and 2026-07-28).

    python examples/everything/server.py --port 3001 [--host 127.0.0.1]

It uses only herald's public API, the way any server author would.
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import zlib
from typing import Any

from herald import Context, PromptResult, Server, ToolResult
from herald.content import audio, embedded_resource, image, message, text
from herald.protocol.errors import InternalError
from herald.transports.http import run_http


def _png_1x1() -> bytes:
    """A valid 1x1 red PNG, built rather than pasted."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, then one RGB pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _wav_silence(samples: int = 800, rate: int = 8000) -> bytes:
    """A short mono 8-bit PCM WAV of silence."""
    data = b"\x80" * samples
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)
    return (
        b"RIFF"
        + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(data))
        + b"WAVE"
        + b"fmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )


PNG = _png_1x1()
WAV = _wav_silence()

server = Server(
    "herald-everything",
    version="1.0.0",
    instructions="Conformance fixture: every tool, resource and prompt the MCP test harness exercises.",
)

NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}


def _answer_text(answer: dict[str, Any]) -> str:
    """The text of a CreateMessageResult (content may be one block or a list)."""
    content = answer.get("content")
    blocks = content if isinstance(content, list) else [content]
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "text":
            return str(block.get("text", ""))
    return str(content)


# ---------------------------------------------------------------------------------------
# Tools, handshake era and both eras. test_simple_text is listed first: the header
# scenarios call the first listed tool with {} arguments.
# ---------------------------------------------------------------------------------------


@server.tool(name="test_simple_text", input_schema=NO_ARGUMENTS)
def test_simple_text() -> str:
    """Returns a single text block."""
    return "This is a simple text response for testing."


@server.tool(name="test_image_content", input_schema=NO_ARGUMENTS)
def test_image_content() -> list[dict[str, Any]]:
    """Returns a 1x1 PNG image."""
    return [image(PNG, "image/png")]


@server.tool(name="test_audio_content", input_schema=NO_ARGUMENTS)
def test_audio_content() -> list[dict[str, Any]]:
    """Returns a short WAV clip."""
    return [audio(WAV, "audio/wav")]


@server.tool(name="test_embedded_resource", input_schema=NO_ARGUMENTS)
def test_embedded_resource() -> list[dict[str, Any]]:
    """Returns an embedded text resource."""
    return [
        embedded_resource(
            "test://embedded-resource", text="This is an embedded resource content.", mime_type="text/plain"
        )
    ]


@server.tool(name="test_multiple_content_types", input_schema=NO_ARGUMENTS)
def test_multiple_content_types() -> list[dict[str, Any]]:
    """Returns text, an image and an embedded resource together."""
    return [
        text("Multiple content types test:"),
        image(PNG, "image/png"),
        embedded_resource(
            "test://mixed-content-resource",
            text='{"test": "data", "value": 123}',
            mime_type="application/json",
        ),
    ]


@server.tool(name="test_tool_with_logging", input_schema=NO_ARGUMENTS)
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three log messages while it runs."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool(name="test_error_handling", input_schema=NO_ARGUMENTS)
def test_error_handling() -> ToolResult:
    """Always fails with a tool error (isError: true)."""
    return ToolResult([text("This tool intentionally returns an error for testing")], is_error=True)


@server.tool(name="test_tool_with_progress", input_schema=NO_ARGUMENTS)
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 out of 100 before it answers."""
    for step, progress in enumerate((0, 50, 100)):
        if step:
            await asyncio.sleep(0.05)
        await ctx.report_progress(progress, 100, f"Completed step {step + 1} of 3")
    return "Progress test completed"


@server.tool(
    name="test_sampling",
    input_schema={
        "type": "object",
        "properties": {"prompt": {"type": "string", "description": "The prompt to send to the model"}},
        "required": ["prompt"],
    },
)
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's model to answer a prompt (sampling/createMessage)."""
    answer = await ctx.sample([message("user", prompt)], max_tokens=100)
    return f"LLM response: {_answer_text(answer)}"


@server.tool(
    name="test_elicitation",
    input_schema={
        "type": "object",
        "properties": {"message": {"type": "string", "description": "The message to show the user"}},
        "required": ["message"],
    },
)
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user for a username and an email (elicitation/create)."""
    answer = await ctx.elicit(
        message,
        {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "Your username"},
                "email": {"type": "string", "description": "Your email address"},
            },
            "required": ["username", "email"],
        },
    )
    return f"User response: action={answer.get('action')}, content={answer.get('content')}"


@server.tool(name="test_elicitation_sep1034_defaults", input_schema=NO_ARGUMENTS)
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicits a form whose fields all carry default values (SEP-1034)."""
    answer = await ctx.elicit(
        "Please review and update the form fields with defaults",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "description": "Verification status", "default": True},
            },
        },
    )
    return f"Elicitation completed: action={answer.get('action')}, content={answer.get('content')}"


@server.tool(name="test_elicitation_sep1330_enums", input_schema=NO_ARGUMENTS)
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicits every enum variant of SEP-1330: titled/untitled, single/multi, legacy."""
    options = [("red", "Red"), ("green", "Green"), ("blue", "Blue")]
    answer = await ctx.elicit(
        "Please pick from the enum fields",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string",
                    "description": "Pick one (untitled)",
                    "enum": [value for value, _ in options],
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Pick one (titled)",
                    "oneOf": [{"const": value, "title": title} for value, title in options],
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Pick one (legacy enumNames)",
                    "enum": [value for value, _ in options],
                    "enumNames": [title for _, title in options],
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Pick several (untitled)",
                    "items": {"type": "string", "enum": [value for value, _ in options]},
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Pick several (titled)",
                    "items": {"anyOf": [{"const": value, "title": title} for value, title in options]},
                },
            },
        },
    )
    return f"Elicitation completed: action={answer.get('action')}, content={answer.get('content')}"


JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [
        {
            "description": "phone or email required",
            "anyOf": [{"required": ["phone"]}, {"required": ["email"]}],
        }
    ],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(name="json_schema_2020_12_tool", input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(
    name: str | None = None,
    address: dict[str, Any] | None = None,
    contactMethod: str | None = None,  # noqa: N803 - the wire name
    phone: str | None = None,
    email: str | None = None,
) -> str:
    """Declares a JSON Schema 2020-12 input schema ($defs, $anchor, allOf/anyOf, if/then/else)."""
    contact = phone if contactMethod == "phone" else email
    return f"Received: name={name}, address={address}, contact={contact}"


@server.tool(name="test_reconnection", input_schema=NO_ARGUMENTS)
async def test_reconnection(ctx: Context) -> str:
    """Closes its HTTP stream mid-call; the client resumes it with Last-Event-ID (SEP-1699)."""
    await ctx.info("Closing the stream before the result; reconnect to receive it")
    ctx.close_stream()
    await asyncio.sleep(0.3)
    return "Reconnection test completed: the result arrived on the resumed stream"


# ---------------------------------------------------------------------------------------
# Tools for the 2026-07-28 scenarios.
# ---------------------------------------------------------------------------------------


@server.tool(name="test_missing_capability", input_schema=NO_ARGUMENTS)
async def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability; without it the call is refused (-32021)."""
    answer = await ctx.sample([message("user", "Say hello")], max_tokens=20)
    return f"Sampled: {_answer_text(answer)}"


@server.tool(name="test_streaming_elicitation", input_schema=NO_ARGUMENTS)
async def test_streaming_elicitation(ctx: Context) -> str:
    """Asks the user a question; in 2026-07-28 that is an input_required result, never a stream request."""
    answer = await ctx.elicit(
        "What is your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        key="name",
    )
    return f"Hello, {(answer.get('content') or {}).get('name', 'stranger')}!"


@server.tool(name="test_logging_tool", input_schema=NO_ARGUMENTS)
async def test_logging_tool(ctx: Context) -> str:
    """Logs at several levels; messages reach only clients that opted in for this request."""
    await ctx.debug("debug message from test_logging_tool")
    await ctx.info("info message from test_logging_tool")
    await ctx.warning("warning message from test_logging_tool")
    return "Logging tool completed"


def _temporary_tool() -> str:
    """A tool that exists only for a moment, to change the tool list."""
    return "temporary"


def _temporary_prompt() -> str:
    """A prompt that exists only for a moment, to change the prompt list."""
    return "temporary"


@server.tool(name="test_trigger_tool_change", input_schema=NO_ARGUMENTS)
async def test_trigger_tool_change() -> str:
    """Adds and removes a tool, so clients get notifications/tools/list_changed."""
    server.tool(name="test_temporary_tool", input_schema=NO_ARGUMENTS)(_temporary_tool)
    await asyncio.sleep(0.05)
    server.remove_tool("test_temporary_tool")
    return "The tool list changed"


@server.tool(name="test_trigger_prompt_change", input_schema=NO_ARGUMENTS)
async def test_trigger_prompt_change() -> str:
    """Adds and removes a prompt, so clients get notifications/prompts/list_changed."""
    server.prompt(name="test_temporary_prompt")(_temporary_prompt)
    await asyncio.sleep(0.05)
    server.remove_prompt("test_temporary_prompt")
    return "The prompt list changed"


@server.tool(
    name="test_x_mcp_header",
    input_schema={
        "type": "object",
        "properties": {
            "region": {
                "type": "string",
                "description": "A region, mirrored in Mcp-Param-Region",
                "x-mcp-header": "Region",
            }
        },
        "required": ["region"],
    },
)
def test_x_mcp_header(region: str) -> str:
    """Echoes its `region` argument, which clients also send as the Mcp-Param-Region header."""
    return f"Region: {region}"


# Multi-round input (SEP-2322). In the handshake era the same tools send requests to the
# client on the call's stream; in 2026-07-28 they end with input_required and are retried.

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool(name="test_input_required_result_elicitation", input_schema=NO_ARGUMENTS)
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Asks the user's name (key user_name) and greets them."""
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    return f"Hello, {(answer.get('content') or {}).get('name', 'stranger')}!"


@server.tool(name="test_input_required_result_sampling", input_schema=NO_ARGUMENTS)
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Asks the client's model a question."""
    answer = await ctx.sample(
        [message("user", "What is the capital of France?")], max_tokens=100, key="capital_question"
    )
    return f"The model answered: {_answer_text(answer)}"


@server.tool(name="test_input_required_result_list_roots", input_schema=NO_ARGUMENTS)
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Asks the client for its roots."""
    roots = await ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(str(root.get("uri")) for root in roots)


@server.tool(name="test_input_required_result_request_state", input_schema=NO_ARGUMENTS)
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Asks a yes/no confirmation and carries state of its own across the round."""
    answers = await ctx.ask(
        {
            "confirmation": (
                "elicitation/create",
                {
                    "message": "Do you want to continue?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"ok": {"type": "boolean"}},
                        "required": ["ok"],
                    },
                },
            )
        },
        state={"step": "confirm"},
    )
    content = answers["confirmation"].get("content") or {}
    return f"Confirmed: ok={content.get('ok')}"


@server.tool(name="test_input_required_result_multiple_inputs", input_schema=NO_ARGUMENTS)
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Asks for an elicitation, a sampling answer and the roots, all at once."""
    answers = await ctx.ask(
        {
            "user_info": (
                "elicitation/create",
                {"message": "What is your name?", "requestedSchema": NAME_FORM},
            ),
            "model_answer": (
                "sampling/createMessage",
                {"messages": [message("user", "Suggest a greeting")], "maxTokens": 100},
            ),
            "client_roots": ("roots/list", {}),
        },
        state={"step": "gather"},
    )
    name = (answers["user_info"].get("content") or {}).get("name")
    roots = answers["client_roots"].get("roots", [])
    return f"name={name}; model={_answer_text(answers['model_answer'])}; roots={len(roots)}"


@server.tool(name="test_input_required_result_multi_round", input_schema=NO_ARGUMENTS)
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Asks a name, then (in a second round) a favourite colour."""
    first = await ctx.ask(
        {"step1": ("elicitation/create", {"message": "What is your name?", "requestedSchema": NAME_FORM})},
        state={"round": 1},
    )
    second = await ctx.ask(
        {
            "step2": (
                "elicitation/create",
                {
                    "message": "What is your favourite colour?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"color": {"type": "string"}},
                        "required": ["color"],
                    },
                },
            )
        },
        state={"round": 2},
    )
    name = (first["step1"].get("content") or {}).get("name")
    color = (second["step2"].get("content") or {}).get("color")
    return f"{name} likes {color}"


@server.tool(name="test_input_required_result_tampered_state", input_schema=NO_ARGUMENTS)
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Asks a confirmation and carries sealed state; a forged state is refused."""
    answers = await ctx.ask(
        {
            "confirm": (
                "elicitation/create",
                {
                    "message": "Confirm?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"ok": {"type": "boolean"}},
                        "required": ["ok"],
                    },
                },
            )
        },
        state={"step": "confirm"},
    )
    return f"Confirmed: {answers['confirm'].get('action')}"


@server.tool(name="test_input_required_result_capabilities", input_schema=NO_ARGUMENTS)
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only for what the client supports: elicitation if declared, else sampling."""
    if ctx.client_supports("elicitation"):
        answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
        return f"Hello, {(answer.get('content') or {}).get('name', 'stranger')}!"
    answer = await ctx.sample([message("user", "Pick a name for me")], max_tokens=50, key="name_suggestion")
    return f"The model suggests: {_answer_text(answer)}"


# ---------------------------------------------------------------------------------------
# Tasks extension (io.modelcontextprotocol/tasks). A tool with task_support runs as a task
# when the request's client capabilities carry the extension; inside the task, input
# requests park it in input_required until the client answers with tasks/update.
# ---------------------------------------------------------------------------------------

CONFIRM_FORM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "description": "Go ahead?"}},
    "required": ["confirm"],
}


@server.tool(name="greet")
def greet(name: str) -> str:
    """Greets by name; never a task (a legacy `task` param is ignored)."""
    return f"Hello, {name}!"


@server.tool(name="slow_compute", task_support="optional")
async def slow_compute(seconds: float = 1, label: str = "compute") -> str:
    """Sleeps `seconds`, then reports; runs as a task when the client supports tasks."""
    await asyncio.sleep(max(seconds, 0))
    return f"Computed {label!r} after {seconds:g}s"


@server.tool(name="failing_job", input_schema=NO_ARGUMENTS, task_support="required")
async def failing_job() -> ToolResult:
    """A task that ends, after about a second, with a tool error (isError: true)."""
    await asyncio.sleep(1)
    return ToolResult([text("failing_job failed on purpose")], is_error=True)


@server.tool(name="protocol_error_job", input_schema=NO_ARGUMENTS, task_support="required")
async def protocol_error_job() -> str:
    """A task that fails at protocol level: it ends failed, with an error and no result."""
    await asyncio.sleep(0.1)
    raise InternalError("protocol_error_job failed on purpose")


@server.tool(name="confirm_delete", task_support="required")
async def confirm_delete(filename: str, ctx: Context) -> str:
    """Asks the user to confirm before deleting `filename` (nothing is really deleted)."""
    answer = await ctx.elicit(f"Delete {filename}?", CONFIRM_FORM, key="confirm")
    confirmed = answer.get("action") == "accept" and (answer.get("content") or {}).get("confirm") is True
    return f"Deleted {filename}" if confirmed else f"Kept {filename}"


@server.tool(name="multi_input", input_schema=NO_ARGUMENTS, task_support="required")
async def multi_input(ctx: Context) -> str:
    """Asks two questions at once; the task waits until both are answered."""
    form = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}},
    }
    answers = await ctx.ask(
        {
            "first": ("elicitation/create", {"message": "First answer?", "requestedSchema": form}),
            "second": ("elicitation/create", {"message": "Second answer?", "requestedSchema": form}),
        }
    )
    names = [(answers[key].get("content") or {}).get("name") for key in ("first", "second")]
    return "Answers: " + ", ".join(str(name) for name in names)


async def _ask_user_name(ctx: Context) -> str:
    """Before the task exists: a multi-round request for the user's name."""
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    return str((answer.get("content") or {}).get("name", "stranger"))


@server.tool(
    name="test_tool_with_task",
    input_schema=NO_ARGUMENTS,
    task_support="required",
    task_preflight=_ask_user_name,
)
async def test_tool_with_task(ctx: Context) -> str:
    """Asks a name first (input_required, no task yet), then greets it from a task."""
    await asyncio.sleep(0.1)
    return f"Hello, {ctx.preflight}!"


# ---------------------------------------------------------------------------------------
# Resources
# ---------------------------------------------------------------------------------------


@server.resource(
    "test://static-text",
    name="static-text",
    mime_type="text/plain",
    description="A static text resource",
)
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource(
    "test://static-binary",
    name="static-binary",
    mime_type="image/png",
    description="A static binary resource (a 1x1 PNG)",
)
def static_binary() -> bytes:
    return PNG


@server.resource_template(
    "test://template/{id}/data",
    name="template-data",
    mime_type="application/json",
    description="Data for any id",
)
def template_data(id: str) -> dict[str, Any]:
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


@server.resource(
    "test://watched-resource",
    name="watched-resource",
    mime_type="text/plain",
    description="A resource clients can subscribe to",
)
def watched_resource() -> str:
    return "Watched resource content"


# ---------------------------------------------------------------------------------------
# Prompts
# ---------------------------------------------------------------------------------------


@server.prompt(name="test_simple_prompt", description="A simple prompt without arguments")
def test_simple_prompt() -> list[dict[str, Any]]:
    return [message("user", "This is a simple prompt for testing.")]


def _complete_arg1(prefix: str) -> list[str]:
    return [value for value in ("test", "testing", "testValue1", "other") if value.startswith(prefix)]


@server.prompt(
    name="test_prompt_with_arguments",
    description="A prompt with two required arguments",
    complete={"arg1": _complete_arg1},
)
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[dict[str, Any]]:
    return [message("user", f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]


@server.prompt(
    name="test_prompt_with_embedded_resource",
    description="A prompt that embeds the resource it is given",
)
def test_prompt_with_embedded_resource(resourceUri: str) -> list[dict[str, Any]]:  # noqa: N803
    return [
        message(
            "user",
            embedded_resource(
                resourceUri, text="Embedded resource content for testing.", mime_type="text/plain"
            ),
        ),
        message("user", "Please process the embedded resource above."),
    ]


@server.prompt(name="test_prompt_with_image", description="A prompt that contains an image")
def test_prompt_with_image() -> list[dict[str, Any]]:
    return [message("user", image(PNG, "image/png")), message("user", "Please analyze the image above.")]


@server.prompt(
    name="test_input_required_result_prompt",
    description="A prompt that first asks the user for context",
)
async def test_input_required_result_prompt(ctx: Context) -> PromptResult:
    answer = await ctx.elicit(
        "What context should the prompt use?",
        {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]},
        key="prompt_context",
    )
    context = (answer.get("content") or {}).get("context", "")
    return PromptResult(
        messages=[message("user", f"Answer with this context in mind: {context}")],
        description="A prompt rendered with the user's context",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="herald conformance fixture (Streamable HTTP)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3001)
    arguments = parser.parse_args()
    run_http(server, host=arguments.host, port=arguments.port)


if __name__ == "__main__":
    main()
