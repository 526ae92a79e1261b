"""The MCP methods, written once for both eras.

Each handler takes the server and a `RequestScope` and returns the result object, or
raises a `ProtocolError`. Era differences that the spec defines per revision (how bad
tool arguments are reported, which code an unknown resource gets) are decided from
`scope.version` here and nowhere else. The server is a `HandlerHost`, the part of it
the handlers read, so this module does not import `Server` (which would import it back).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

import orjson

from herald.content import ToolResult
from herald.protocol.cursor import paginate
from herald.protocol.errors import AuthRequired, InvalidParams, ProtocolError, ResourceNotFound
from herald.protocol.sealing import unseal
from herald.protocol.validation import MAX_JSON_DEPTH, nested_deeper_than
from herald.protocol.versions import (
    ARGUMENT_ERRORS_AS_RESULTS_SINCE,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
    Era,
    is_at_least,
)
from herald.runtime.jobs import Jobs
from herald.runtime.threads import WorkerThreads
from herald.server.context import Context
from herald.server.inputs import InputRequired, InputRound
from herald.server.lifespan import LifespanNotRunning
from herald.server.logging_levels import SEVERITY
from herald.server.registry import Registry, ToolSpec
from herald.server.results import (
    error_result,
    prompt_result,
    resource_contents,
    tool_result,
    tool_result_to_wire,
    unwrapped,
)
from herald.server.scope import RequestScope
from herald.server.scopes import Scopes
from herald.server.signature import ArgumentsRejected, Signature
from herald.server.subscriptions import NotificationSource, Subscription
from herald.server.tasks import TaskManager

logger = logging.getLogger("herald.server")
MAX_COMPLETIONS = 100
#: Where ChatGPT reads a tool result's OAuth challenge (its Apps SDK's step-up consent).
WWW_AUTHENTICATE_META = "mcp/www_authenticate"


class HandlerHost(NotificationSource, Protocol):
    """What the handlers read of the server: its offer, its settings and its task manager."""

    instructions: str | None
    page_size: int
    registry: Registry
    state_key: bytes
    request_state_ttl: float
    clock: Callable[[], float]
    tasks: TaskManager
    jobs: Jobs
    threads: WorkerThreads
    lifespan_state: Any

    @property
    def lifespan_running(self) -> bool: ...

    tool_error_types: tuple[type[BaseException], ...]
    scopes: Scopes


Handler = Callable[[HandlerHost, RequestScope], Awaitable[dict[str, Any]]]


async def call(server: HandlerHost, function: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    """Call a user function: a coroutine function on the loop, a plain one on a worker thread.

    A plain `def` may block (a database driver, a file, `time.sleep`); on the loop that
    would stall every other request and job, so it runs in the server's bounded pool
    (`Server(max_threads=...)`). What it returns may still be awaitable (a `def` handing
    back a coroutine); that is awaited here, on the loop.
    """
    if is_coroutine_function(function):
        return await function(**arguments)
    value = await server.threads.run(function, **arguments)
    if inspect.isawaitable(value):
        value = await value
    return value


def is_coroutine_function(function: Callable[..., Any]) -> bool:
    """`inspect.iscoroutinefunction`, remembered where the function can be (it unwraps
    partials and methods on every ask)."""
    try:
        return _remembered_coroutine_function(function)
    except TypeError:  # an unhashable callable (a dataclass instance, say)
        return inspect.iscoroutinefunction(function)


@functools.lru_cache(maxsize=4096)
def _remembered_coroutine_function(function: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(function)


def make_context(server: HandlerHost, scope: RequestScope) -> Context:
    return Context(
        requester=scope.requester,
        input_round=input_round(server, scope) if scope.era.modern else None,
        close_stream_callback=scope.close_stream,
        owner=scope.owner,
        principal=scope.principal,
        peer=scope.peer,
        request_id=scope.request.id,
        protocol_version=scope.version,
        client_capabilities=scope.client_capabilities,
        client_info=scope.client_info,
        outbox=scope.outbox,
        progress_token=scope.progress_token,
        log_threshold=scope.log_threshold,
        lifespan=server.lifespan_state,
        loop=asyncio.get_running_loop(),
    )


def state_purpose(scope: RequestScope) -> str:
    """What a sealed requestState is bound to: the method, the thing it names, and its arguments.

    A state minted for `confirm(message="delete A?")` must not answer `confirm(message="delete
    B?")`: the answers it carries were given to the first question. The arguments are hashed
    in canonical form (sorted keys), as a retry of the same call sends them again.
    """
    params = scope.params
    arguments = orjson.dumps(params.get("arguments"), option=orjson.OPT_SORT_KEYS)
    digest = hashlib.sha256(arguments).hexdigest()
    return f"{scope.request.method}:{params.get('name', params.get('uri', ''))}:{digest}"


def input_round(server: HandlerHost, scope: RequestScope) -> InputRound:
    """Answers from earlier rounds (sealed in requestState) merged with this retry's answers."""
    params = scope.params
    round_ = InputRound()
    token = params.get("requestState")
    if isinstance(token, str):
        carried = unseal(server.state_key, state_purpose(scope), token)
        if isinstance(carried, dict):
            expires = carried.get("expires")
            if not isinstance(expires, int | float) or server.clock() > expires:
                raise InvalidParams(
                    "Invalid requestState: it expired; send the request again without it to start over"
                )
            round_.answers.update(carried.get("answers") or {})
            round_.state = carried.get("state")
    responses = params.get("inputResponses")
    if isinstance(responses, dict):
        round_.answers.update(responses)
    return round_


def bind(
    signature: Signature, arguments: dict[str, Any], server: HandlerHost, scope: RequestScope
) -> dict[str, Any]:
    """The keyword arguments for a user function: converted values plus its context, if it asks."""
    try:
        values = signature.convert(arguments)
    except ArgumentsRejected as exc:
        raise InvalidParams(f"Invalid arguments: {exc}") from None
    if signature.context_parameter is not None:
        values[signature.context_parameter] = make_context(server, scope)
    return signature.with_lifespan(values, server.lifespan_state, server.lifespan_running)


async def ping(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    return {}


async def discover(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    result: dict[str, Any] = {
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": server.capabilities(Era.MODERN),
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return result


async def list_tools(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    tools = [spec.to_wire(scope.era) for spec in server.registry.tools.values()]
    return paginate("tools", tools, scope.params.get("cursor"), server.page_size)


async def call_tool(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    name = scope.params["name"]
    spec = server.registry.tools.get(name)
    if spec is None:
        raise InvalidParams(f"Unknown tool: {name!r}. Call tools/list to see the available tools.")
    if scope.principal is None and server.scopes.needs_token("tools/call", scope.params):
        return sign_in_result(server, f"Tool {name!r} needs you to sign in first.", ())
    arguments = scope.params.get("arguments") or {}
    if nested_deeper_than(arguments):  # checked first: jsonschema-rs cannot convert such a value
        problems = [f"arguments: nested more than {MAX_JSON_DEPTH} levels deep"]
    else:
        problems = [
            f"{_path(error.instance_path)}: {error.message}"
            for error in spec.validator.iter_errors(arguments)
        ]
    if problems:
        message = f"Invalid arguments for tool {name!r}: " + "; ".join(problems)
        if is_at_least(scope.version, ARGUMENT_ERRORS_AS_RESULTS_SINCE):
            return error_result(message)
        raise InvalidParams(message)
    as_task = server.tasks.wants_task(scope, spec)
    context = make_context(server, scope)
    if as_task is not None:

        def run(task_context: Context) -> Awaitable[dict[str, Any]]:
            return execute_tool(server, spec, arguments, task_context)

        return await server.tasks.start(scope, spec, arguments, as_task, context, run)
    return await execute_tool(server, spec, arguments, context)


async def execute_tool(
    server: HandlerHost, spec: ToolSpec, arguments: dict[str, Any], context: Context
) -> dict[str, Any]:
    """Run a tool with validated arguments and shape its result (now, or inside a task)."""
    name = spec.name
    try:
        values = spec.signature.convert(arguments)
    except ArgumentsRejected as exc:
        return error_result(f"Invalid arguments for tool {name!r}: {exc}")
    if spec.signature.context_parameter is not None:
        values[spec.signature.context_parameter] = context
    shape = spec.shape
    try:
        if spec.signature.from_lifespan:
            spec.signature.with_lifespan(values, server.lifespan_state, server.lifespan_running)
        value = await (spec.function(**values) if spec.is_async else call(server, spec.function, values))
        if shape is not None and shape.serialize is not None and not isinstance(value, ToolResult):
            result = tool_result(shape.serialize(value), wrapped=shape.wrapped, json_ready=True)
        else:
            result = tool_result(value, wrapped=shape is not None and shape.wrapped)
    except AuthRequired as exc:
        return sign_in_result(server, str(exc), exc.scopes)
    except server.tool_error_types as exc:
        return error_result(str(exc))
    except LifespanNotRunning as exc:
        logger.error("tool %r: %s (see Server.http_app for a mounted app)", name, exc)
        return error_result(f"Tool {name!r} is not available: the server has not finished starting.")
    except (ProtocolError, InputRequired):
        raise  # a protocol-level answer (e.g. a missing client capability), not a tool failure
    except Exception:
        logger.exception("tool %r raised", name)
        return error_result(f"Tool {name!r} failed with an internal error.")
    # A `-> str` (int, float, bool) tool that returned exactly that fits its wrapped schema.
    fits_by_type = shape is not None and shape.scalar is not None and type(value) is shape.scalar
    if spec.output_validator is not None and not result.is_error and not fits_by_type:
        if result.structured is None:
            return error_result(f"Tool {name!r} declares an outputSchema but returned no structured content.")
        if not _fits(spec.output_validator, result.structured):  # the errors only when there are some
            found = _misfits(spec.output_validator, result.structured)
            logger.error("tool %r returned structured content outside its outputSchema: %s", name, found)
            return error_result(f"Tool {name!r} produced output that does not match its outputSchema.")
    wire = tool_result_to_wire(result)
    # The version's set, not `Era.of(...)`: this runs once per call, and the enum costs more.
    bare = shape is not None and shape.wrapped and context.protocol_version in MODERN_VERSIONS
    return unwrapped(wire) if bare else wire


def _fits(validator: Any, value: Any) -> bool:
    try:
        return bool(validator.is_valid(value))
    except ValueError:  # a value that is not JSON at all (a datetime in a dict, say)
        return False


def _misfits(validator: Any, value: Any) -> list[str]:
    try:
        return [error.message for error in validator.iter_errors(value)]
    except ValueError as exc:
        return [str(exc)]


def sign_in_result(server: HandlerHost, message: str, scopes: Iterable[str]) -> dict[str, Any]:
    """A tool error asking the caller to sign in (or grant `scopes`): the OAuth challenge in
    `_meta["mcp/www_authenticate"]`, where ChatGPT looks for it, when the server asks for tokens."""
    result = error_result(message)
    challenge = server.scopes.challenge
    if challenge is not None:
        error = "insufficient_scope" if scopes else None
        result["_meta"] = {WWW_AUTHENTICATE_META: [challenge(scopes, error)]}
    return result


async def list_resources(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    resources = [spec.to_wire() for spec in server.registry.resources.values()]
    return paginate("resources", resources, scope.params.get("cursor"), server.page_size)


async def list_resource_templates(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    templates = [spec.to_wire() for spec in server.registry.templates.values()]
    return paginate("resourceTemplates", templates, scope.params.get("cursor"), server.page_size)


async def read_resource(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    uri: str = scope.params["uri"]
    spec = server.registry.find_resource(uri)
    if spec is not None:
        values: dict[str, Any] = {}
        function, context_parameter, mime_type = spec.function, spec.context_parameter, spec.mime_type
    else:
        found = server.registry.find_template(uri)
        if found is None:
            raise ResourceNotFound(uri)
        template, variables = found
        values = dict(variables)
        function, context_parameter, mime_type = (
            template.function,
            template.context_parameter,
            template.mime_type,
        )
    if context_parameter is not None:
        values[context_parameter] = make_context(server, scope)
    try:
        value = await call(server, function, values)
    except LookupError:
        raise ResourceNotFound(uri) from None
    contents = resource_contents(uri, mime_type, value)
    if spec is not None and spec.uri != uri:  # an older version of a widget: answered as asked
        contents = [{**item, "uri": uri} if item.get("uri") == spec.uri else item for item in contents]
    return {"contents": contents}


async def subscribe(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    assert scope.session is not None  # the method exists only in the handshake era
    scope.session.subscriptions.add(scope.params["uri"])
    return {}


async def unsubscribe(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    assert scope.session is not None
    scope.session.subscriptions.discard(scope.params["uri"])
    return {}


async def list_prompts(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    prompts = [spec.to_wire() for spec in server.registry.prompts.values()]
    return paginate("prompts", prompts, scope.params.get("cursor"), server.page_size)


async def get_prompt(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    name = scope.params["name"]
    spec = server.registry.prompts.get(name)
    if spec is None:
        raise InvalidParams(f"Unknown prompt: {name!r}. Call prompts/list to see the available prompts.")
    arguments = dict(scope.params.get("arguments") or {})
    missing = [
        argument.name for argument in spec.arguments if argument.required and argument.name not in arguments
    ]
    if missing:
        raise InvalidParams(f"Missing required arguments for prompt {name!r}: {', '.join(missing)}")
    unknown = sorted(set(arguments) - {argument.name for argument in spec.arguments})
    if unknown:
        raise InvalidParams(f"Unknown arguments for prompt {name!r}: {', '.join(unknown)}")
    values = bind(spec.signature, arguments, server, scope)
    try:
        return prompt_result(await call(server, spec.function, values))
    except ValueError as exc:
        raise InvalidParams(f"Invalid arguments for prompt {name!r}: {exc}") from None


async def complete(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    reference = scope.params["ref"]
    argument = scope.params["argument"]
    if reference["type"] == "ref/prompt":
        prompt = server.registry.prompts.get(reference["name"])
        if prompt is None:
            raise InvalidParams(f"Unknown prompt: {reference['name']!r}")
        completers = prompt.completers
    else:
        template = server.registry.templates.get(reference["uri"])
        if template is None:
            raise InvalidParams(f"Unknown resource template: {reference['uri']!r}")
        completers = template.completers
    completer = completers.get(argument["name"])
    values: list[str] = (
        [] if completer is None else await call(server, completer, {"prefix": argument["value"]})
    )
    return {
        "completion": {
            "values": values[:MAX_COMPLETIONS],
            "total": len(values),
            "hasMore": len(values) > MAX_COMPLETIONS,
        }
    }


async def set_level(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    assert scope.session is not None
    level = scope.params["level"]
    if level not in SEVERITY:
        raise InvalidParams(f"Unknown log level {level!r}; use one of {', '.join(SEVERITY)}")
    scope.session.log_level = level
    return {}


async def listen(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    """subscriptions/listen on a message stream: notifications until the client cancels it."""
    wanted = scope.params.get("notifications") or {}
    subscription = Subscription(
        server, scope.request.id, wanted, owner=scope.owner, principal=scope.principal
    )
    scope.outbox.send(subscription.acknowledgement())
    stop = subscription.open(scope.outbox.send)
    try:  # a listen cancelled while it replays must stop hearing too
        if server.jobs.in_use:
            await subscription.replay(server.jobs.reader, scope.outbox)
        await asyncio.Event().wait()  # ends by cancellation: notifications/cancelled, or the stream closing
    finally:
        stop()
    raise AssertionError("unreachable")  # pragma: no cover


async def get_task(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    return await server.tasks.get(scope)


async def update_task(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    return await server.tasks.update(scope)


async def cancel_task(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    return await server.tasks.cancel(scope)


async def task_result(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    return await server.tasks.result_of(scope)


async def list_tasks(server: HandlerHost, scope: RequestScope) -> dict[str, Any]:
    return await server.tasks.list(scope)


#: method -> (handler, the server capability that must be declared for it, if any).
HANDLERS: dict[str, tuple[Handler, str | None]] = {
    "ping": (ping, None),
    "server/discover": (discover, None),
    "tools/list": (list_tools, "tools"),
    "tools/call": (call_tool, "tools"),
    "resources/list": (list_resources, "resources"),
    "resources/templates/list": (list_resource_templates, "resources"),
    "resources/read": (read_resource, "resources"),
    "resources/subscribe": (subscribe, "resources"),
    "resources/unsubscribe": (unsubscribe, "resources"),
    "prompts/list": (list_prompts, "prompts"),
    "prompts/get": (get_prompt, "prompts"),
    "completion/complete": (complete, "completions"),
    "logging/setLevel": (set_level, "logging"),
    "subscriptions/listen": (listen, None),
    "tasks/get": (get_task, None),
    "tasks/update": (update_task, None),
    "tasks/cancel": (cancel_task, None),
    "tasks/result": (task_result, None),
    "tasks/list": (list_tasks, None),
}

#: Methods the official wire types do not list (tasks are an extension); their handlers check params.
SELF_VALIDATED = frozenset(method for method in HANDLERS if method.startswith("tasks/"))


def _path(parts: list[str | int]) -> str:
    return "/".join(str(part) for part in parts) or "arguments"
