"""`Server`: the public API for declaring what an MCP server offers.

Decorators read type hints and docstrings so that a typed function is a complete
definition; anything can be given explicitly instead (schemas, titles, annotations,
icons, `_meta`). Capabilities are computed from what is registered, never written by
hand, and the server tells every live connection when a list changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, TypeVar, overload

import herald.telemetry
from herald.jobs.store import JobStore
from herald.protocol.errors import ToolError
from herald.protocol.messages import Notification
from herald.protocol.versions import Era
from herald.runtime.context import JobContext
from herald.runtime.jobs import Jobs
from herald.runtime.membership import DEFAULT_LEASE_SECONDS, DEFAULT_RETENTION_SECONDS, JobFunction
from herald.runtime.runner import (
    DEFAULT_SHUTDOWN_GRACE_SECONDS,
)
from herald.runtime.threaded import SyncJobContext, threaded_job
from herald.runtime.threads import DEFAULT_MAX_THREADS, WorkerThreads
from herald.server.admission import Admission
from herald.server.capabilities import capabilities
from herald.server.files import parameters_typed
from herald.server.jobs import (
    install_job_support,
    job_tool,
    open_job_tools_to_widgets,
)
from herald.server.lifespan import Lifespan
from herald.server.middleware import Middleware
from herald.server.notifications import Notifications
from herald.server.registry import Completer, ListKind, Registry, ResourceSpec
from herald.server.scopes import Scopes
from herald.server.signature import Signature, parameter_of_type, read_signature
from herald.server.specs import (
    docstring,
    prompt_spec,
    resource_spec,
    template_spec,
    tool_spec,
    with_file_parameters,
)
from herald.server.tasks import TaskManager
from herald.server.uploads import Upload, accept_uploads
from herald.server.widgets import UI_MIME_TYPE, ToolUI, Widget, merge_meta

F = TypeVar("F", bound=Callable[..., Any])

#: Jobs one client may have running or waiting at once, unless the server says otherwise.
DEFAULT_MAX_JOBS_PER_OWNER = 16
#: Jobs that may wait `pending` at once, from every client together: what a crowd of
#: callers (or one with many addresses) can queue, and so store, before the server says no.
DEFAULT_MAX_WAITING_JOBS = 256
#: How long a 2026-07-28 requestState stays good: long enough for a person to answer.
DEFAULT_REQUEST_STATE_TTL = 600.0


class Server:
    """An MCP server definition, independent of any transport."""

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        page_size: int = 100,
        cache_ttl_ms: int = 0,
        cache_scope: str = "private",
        state_key: bytes | None = None,
        max_running_jobs: int | None = None,
        max_jobs_per_owner: int | None = DEFAULT_MAX_JOBS_PER_OWNER,
        max_waiting_jobs: int | None = DEFAULT_MAX_WAITING_JOBS,
        job_lease_seconds: float = DEFAULT_LEASE_SECONDS,
        job_retention_seconds: float = DEFAULT_RETENTION_SECONDS,
        job_shutdown_grace_seconds: float = DEFAULT_SHUTDOWN_GRACE_SECONDS,
        takes_jobs: bool = True,
        max_threads: int = DEFAULT_MAX_THREADS,
        lifespan: Lifespan | None = None,
        store: str | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.page_size = page_size
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        self.registry = Registry()
        #: Where plain `def` tools, resources, prompts and jobs run: at most `max_threads` at once.
        self.threads = WorkerThreads(max_threads)
        #: Entered once per process around serving (`running`); see `herald.server.lifespan`.
        self.lifespan = lifespan
        #: What the lifespan yielded, while it runs: `ctx.lifespan` and `FromLifespan` parameters.
        self.lifespan_state: Any = None
        self._running = 0
        self._started = False
        #: Where `run` and `http_app` keep jobs when not told (a store URL, `memory`, a path);
        #: None: a SQLite file in the user's data directory, for a server with jobs.
        self.store = store
        #: Set by `use_job_store`: the server keeps its jobs where it was told, not by URL.
        self.job_store_chosen = False
        #: What runs around every request, outermost first (`add_middleware`).
        self.middleware: list[Middleware] = []
        #: Set by a transport when the process begins to stop (SIGTERM): `/readyz` says 503
        #: from then on, so a load balancer sends its requests elsewhere while it drains.
        self.draining = False
        # Seals requestState of multi-round requests; replicas must share it: HERALD_STATE_KEY,
        # or else the key of the session store they share (then `state_key_configured` is False).
        configured = state_key or _configured_state_key()
        self.state_key = configured or secrets.token_bytes(32)
        self.state_key_configured = configured is not None
        #: How long a sealed requestState may be brought back, in seconds; and the clock it is read by.
        self.request_state_ttl = DEFAULT_REQUEST_STATE_TTL
        self.clock: Callable[[], float] = time.time
        #: The one door to this server's jobs: store, writer, runner, listeners.
        self.jobs = Jobs(
            max_running=max_running_jobs,
            lease_seconds=job_lease_seconds,
            retention_seconds=job_retention_seconds,
            shutdown_grace_seconds=job_shutdown_grace_seconds,
            takes_jobs=takes_jobs,
        )
        #: How many jobs one client may have running or waiting at once: an authenticated
        #: subject, else a network address (every session and sessionless request from it),
        #: else a session; one more is refused with a result that says so (None: no cap).
        self.max_jobs_per_owner: int | None = max_jobs_per_owner
        #: How many jobs may wait `pending` at once, all clients together (None: no bound).
        self.max_waiting_jobs: int | None = max_waiting_jobs
        #: Job tools that take a file in parts from their widget, and the parameter it fills.
        self.upload_parameters: dict[str, str] = {}
        self.tool_error_types: tuple[type[BaseException], ...] = (ToolError,)
        #: Who hears the notifications this server sends: connections, listens, the relay.
        self.notifications = Notifications()
        self._capabilities: dict[Era, dict[str, Any]] = {}
        self.tasks: TaskManager = TaskManager(self)
        self.registry.add_listener(self._list_changed)
        #: Who may start another job: counts per client and of waiting jobs.
        self.admission = Admission()
        self.jobs.add_listener(lambda job, _: self.admission.heard(job))
        #: The OAuth scopes declared on what this server offers, and those every request needs
        #: (set by a transport that asks for tokens).
        self.scopes = Scopes()

    # -- what the server says about itself ---------------------------------------------

    def server_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title is not None:
            info["title"] = self.title
        return info

    def hello(self) -> dict[str, Any]:
        """What `initialize` answers besides the negotiated version."""
        hello: dict[str, Any] = {"capabilities": self.capabilities(), "serverInfo": self.server_info()}
        if self.instructions:
            hello["instructions"] = self.instructions
        return hello

    def tool_input_schema(self, name: str) -> object:
        """The input schema of the tool `name`, or None when there is no such tool."""
        tool = self.registry.tools.get(name)
        return tool.input_schema if tool is not None else None

    def capabilities(self, era: Era = Era.HANDSHAKE) -> dict[str, Any]:
        """What this server serves, as `era` declares it (`herald.server.capabilities`).

        Every request consults it, so it is derived once per registry change and era. Treat
        the returned dict as read-only.
        """
        found = self._capabilities.get(era)
        if found is None:
            found = self._capabilities[era] = capabilities(self.registry, era)
        return found

    # -- the process's lifetime -----------------------------------------------------------

    @property
    def lifespan_running(self) -> bool:
        """Whether `running` has started the server (and not yet stopped it) in this process."""
        return self._started

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Any]:
        """What a served server needs once per process: its lifespan, then its jobs.

        Every transport enters it (stdio, HTTP served or mounted, a worker); a test that
        drives the server itself may too. The lifespan is entered first and left last, so a
        job resumed at start-up and one that finishes during shutdown can both use what it
        opened. Entered again while it runs (an app mounted twice), it only yields. Yields
        what the lifespan yielded.
        """
        self._running += 1  # claimed before any await: a second entry only yields
        try:
            if self._running > 1:
                yield self.lifespan_state
                return
            async with contextlib.AsyncExitStack() as stack:
                stack.push_async_callback(_flush_telemetry)  # left last: what shutdown reported too
                if self.lifespan is not None:
                    self.lifespan_state = await stack.enter_async_context(self.lifespan(self))
                    stack.callback(setattr, self, "lifespan_state", None)
                # Left after the jobs stop and before the lifespan closes: a plain `def` still
                # running (a cancelled request's) must not outlive what it may be using.
                stack.push_async_callback(self.threads.finish, self.jobs.shutdown_grace_seconds)
                self.jobs.lifespan = self.lifespan_state
                await self.jobs.start_up()
                stack.push_async_callback(self.jobs.shut_down)
                self._started = True
                try:
                    yield self.lifespan_state
                finally:
                    self._started = False
        finally:
            self._running -= 1

    def add_middleware(self, middleware: Middleware) -> None:
        """Run `middleware` around every request (see `herald.server.middleware`).

        `async def middleware(call, call_next)`; the first added runs outermost.
        """
        self.middleware.append(middleware)

    # -- server-initiated messages -------------------------------------------------------

    def notify_resource_updated(self, uri: str) -> None:
        """Tell every client subscribed to `uri` that its content changed."""
        self.notifications.send(Notification("notifications/resources/updated", {"uri": uri}), uri)

    def _list_changed(self, kind: ListKind) -> None:
        self._capabilities.clear()
        self.notifications.send(Notification(f"notifications/{kind}/list_changed"))

    # -- jobs ----------------------------------------------------------------------------------

    # The job knobs are constructor arguments here and, once made, the door's (`server.jobs`):
    # each of its setters takes effect at once, or refuses a change it could not honour.

    def use_job_store(self, store: JobStore) -> None:
        """Keep jobs, their events and results in `store`.

        Without it, `herald.Server.run` and `http_app` open the store `Server(store=...)`
        names (a SQLite file in the user's data directory by default), and a server driven
        by other means keeps its jobs in memory.
        """
        self.jobs.use_store(store)
        self.job_store_chosen = True

    @overload
    def job(self, function: F, /) -> F: ...

    @overload
    def job(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        annotations: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        ui: Widget | ToolUI | None = None,
        resumable: bool = False,
        scopes: Iterable[str] = (),
    ) -> Callable[[F], F]: ...

    def job(
        self,
        function: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        annotations: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        ui: Widget | ToolUI | None = None,
        resumable: bool = False,
        scopes: Iterable[str] = (),
    ) -> Any:
        """Register a function as a job: a tool that answers at once with a job id.

        Bare (`@server.job`) or with options (`@server.job(resumable=True)`), as `tool`.

        An `async def` may take a `JobContext` parameter; a plain `def` runs on a worker
        thread and takes a `SyncJobContext`, whose calls block instead of being awaited.
        The function returns JSON data (stored as the
        job's result) or calls `ctx.complete(...)` with a result it saved itself, and fails
        the job by raising `JobFailure`. With `ui`, the widget that renders the job's start
        may also poll, cancel and fetch the result: the job tools are opened to it.

        `resumable=True` says the function can go on from its last `ctx.checkpoint(state)`:
        if the worker running it stops (killed, say), another worker on the same store
        calls it again with the same arguments and `ctx.resume_state` set, instead of
        failing the job `interrupted`.
        """

        def register(target: F) -> F:
            tool_name = name or target.__name__
            self.scopes.declare("tool", tool_name, scopes)
            context_name = job_context_parameter(target)
            signature = read_signature(target, (JobContext, SyncJobContext))
            run = (
                target
                if inspect.iscoroutinefunction(target)
                else threaded_job(target, context_name, self.threads)
            )
            run = _restoring(signature, self._filled_from_lifespan(signature, run))
            self.jobs.add_function(tool_name, JobFunction(run, context_name, resumable))
            if not self.registry.tools.get("get_job_status"):
                install_job_support(self)
            if ui is not None:
                open_job_tools_to_widgets(self)
            for parameter in parameters_typed(target, Upload):
                accept_uploads(self, tool_name, parameter)
            self.registry.add_tool(
                job_tool(
                    self,
                    signature,
                    run,
                    name=tool_name,
                    description=description or docstring(target) or tool_name,
                    title=title,
                    annotations=annotations,
                    meta=with_file_parameters(self._with_ui(meta, ui), target),
                )
            )
            return target

        return register(function) if function is not None else register

    def _filled_from_lifespan(self, signature: Signature, run: Callable[..., Any]) -> Callable[..., Any]:
        """`run`, given the job's `FromLifespan` parameters where it runs (on whatever worker)."""
        if not signature.from_lifespan:
            return run

        async def filled(**values: Any) -> Any:
            return await run(**signature.with_lifespan(values, self.lifespan_state, self.lifespan_running))

        return filled

    # -- widgets ---------------------------------------------------------------------------

    def widget(self, widget: Widget) -> str:
        """Serve `widget` as a `ui://` resource (once, however many tools use it); returns its URI."""
        uri = widget.uri(self.name)
        if uri not in self.registry.resources:
            meta = widget.content_meta()
            content = {"uri": uri, "mimeType": UI_MIME_TYPE, "text": widget.html, "_meta": meta}

            async def document() -> list[dict[str, Any]]:  # async: nothing to hand a thread
                return [content]

            self.registry.families[widget.family(self.name)] = uri
            self.registry.add_resource(
                ResourceSpec(
                    uri=uri,
                    name=widget.name,
                    function=document,
                    context_parameter=None,
                    description=widget.description,
                    mime_type=UI_MIME_TYPE,
                    title=widget.title,
                    meta=meta,
                )
            )
        return uri

    def _with_ui(self, meta: dict[str, Any] | None, ui: Widget | ToolUI | None) -> dict[str, Any] | None:
        if ui is None:
            return meta
        binding = ToolUI(ui) if isinstance(ui, Widget) else ui
        if binding.widget is not None:
            self.widget(binding.widget)
        return merge_meta(meta, binding.tool_meta(self.name))

    # -- registration ----------------------------------------------------------------------

    @overload
    def tool(self, function: F, /) -> F: ...

    @overload
    def tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        task_support: str | None = None,
        task_preflight: Callable[..., Any] | None = None,
        ui: Widget | ToolUI | None = None,
        scopes: Iterable[str] = (),
        auth: bool = True,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        function: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        task_support: str | None = None,
        task_preflight: Callable[..., Any] | None = None,
        ui: Widget | ToolUI | None = None,
        scopes: Iterable[str] = (),
        auth: bool = True,
    ) -> Any:
        """Register a tool. Arguments and output schemas come from type hints unless given.

        `task_support` ("optional" or "required") lets clients run the tool as an MCP task;
        `task_preflight(ctx)` runs before such a task is created and may ask the client for
        input (a 2026-07-28 multi-round request); what it returns reaches the tool as
        `ctx.preflight`. `ui` renders the tool's results in a widget, or says who may call
        it (see `ToolUI`); both hosts' metadata is written from it. `scopes` are the OAuth
        scopes a caller's token must grant to call it, where the transport authenticates;
        `auth=False` lets a caller without a token call it (and discover the server), while
        every other tool still needs one and answers such a caller with a sign-in challenge.
        """

        def register(target: F) -> F:
            tool_name = name or target.__name__
            self.scopes.declare("tool", tool_name, scopes)
            if auth:
                self.scopes.public.discard(tool_name)
            else:
                self.scopes.public.add(tool_name)
            self.registry.add_tool(
                tool_spec(
                    target,
                    name=name,
                    description=description,
                    title=title,
                    input_schema=input_schema,
                    output_schema=output_schema,
                    annotations=annotations,
                    icons=icons,
                    meta=self._with_ui(meta, ui),
                    task_support=task_support,
                    task_preflight=task_preflight,
                )
            )
            return target

        return register(function) if function is not None else register

    def remove_tool(self, name: str) -> None:
        self.registry.remove_tool(name)
        self.scopes.public.discard(name)  # a tool added again under the name starts protected

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        title: str | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
    ) -> Callable[[F], F]:
        """Register a resource at a fixed URI; the function returns str, bytes or JSON data."""

        def register(target: F) -> F:
            self.scopes.declare("resource", uri, scopes)
            self.registry.add_resource(
                resource_spec(
                    target,
                    uri,
                    name=name,
                    description=description,
                    mime_type=mime_type,
                    title=title,
                    annotations=annotations,
                    icons=icons,
                    meta=meta,
                )
            )
            return target

        return register

    def resource_template(
        self,
        uri_template: str,
        *,
        name: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        title: str | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        complete: dict[str, Completer] | None = None,
        scopes: Iterable[str] = (),
    ) -> Callable[[F], F]:
        """Register a URI template; its variables become the function's keyword arguments.

        The function raises `LookupError` (e.g. `KeyError`) for a URI it does not serve,
        which the client receives as "resource not found".
        """

        def register(target: F) -> F:
            self.scopes.declare("template", uri_template, scopes)
            self.registry.add_template(
                template_spec(
                    target,
                    uri_template,
                    name=name,
                    description=description,
                    mime_type=mime_type,
                    title=title,
                    annotations=annotations,
                    icons=icons,
                    meta=meta,
                    complete=complete,
                )
            )
            return target

        return register

    def prompt(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        complete: dict[str, Completer] | None = None,
        scopes: Iterable[str] = (),
    ) -> Callable[[F], F]:
        """Register a prompt; its string parameters are the prompt's arguments."""

        def register(target: F) -> F:
            self.scopes.declare("prompt", name or target.__name__, scopes)
            self.registry.add_prompt(
                prompt_spec(
                    target,
                    name=name,
                    description=description,
                    title=title,
                    icons=icons,
                    meta=meta,
                    complete=complete,
                )
            )
            return target

        return register

    def remove_prompt(self, name: str) -> None:
        self.registry.remove_prompt(name)

    # -- authorization -------------------------------------------------------------------


def job_context_parameter(function: Callable[..., Any]) -> str | None:
    """The parameter a job function takes its context in: `JobContext` for an `async def`,
    `SyncJobContext` for a plain `def` (which runs on a thread, where nothing can be awaited)."""
    threaded = not inspect.iscoroutinefunction(function)
    wanted, other = (SyncJobContext, JobContext) if threaded else (JobContext, SyncJobContext)
    if parameter_of_type(function, other) is not None:
        kind = "a plain def runs on a worker thread" if threaded else "an async def awaits"
        context = f"its context is a {wanted.__name__}, not a {other.__name__}"
        raise TypeError(f"job {function.__qualname__}: {kind}, so {context}")
    return parameter_of_type(function, wanted)


def _configured_state_key() -> bytes | None:
    configured = os.environ.get("HERALD_STATE_KEY")
    return configured.encode() if configured else None


async def _flush_telemetry() -> None:
    """Export what telemetry holds before the process ends (see `Telemetry.flush`)."""
    if (telemetry := herald.telemetry.active) is not None:
        await asyncio.to_thread(telemetry.flush)


def _restoring(signature: Signature, run: Callable[..., Any]) -> Callable[..., Any]:
    """`run`, given its arguments as the types it declares (a `FileRef`, a `datetime`).

    A job's arguments are kept as JSON, in the store, for whichever worker runs it: each
    run turns them back into the declared types, the first as well as a resumed one.
    """
    model = signature.arguments_model
    if model is None:
        return run

    async def restored(**values: Any) -> Any:
        arguments = {name: values.pop(name) for name in list(values) if name in model.model_fields}
        return await run(**values, **signature.convert(arguments))

    return restored
