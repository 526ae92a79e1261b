"""What a server declares it can do, derived from what it serves, per protocol era.

A capability is declared exactly when something registered serves it, so it is never
written by hand and never drifts from the registry. The eras differ in one place: MCP
tasks are a core capability in the handshake era and an extension in 2026-07-28; and job
events are declared under both `experimental` (which handshake-era schemas know) and
`extensions` (2026-07-28's word).
"""

from __future__ import annotations

from typing import Any

from herald.protocol.versions import Era
from herald.server.jobs import JOB_EVENTS_EXTENSION, JOB_EVENTS_SETTINGS
from herald.server.registry import Registry
from herald.server.tasks import TASKS_EXTENSION

__all__ = ["capabilities"]


def capabilities(registry: Registry, era: Era) -> dict[str, Any]:
    """The capabilities `registry` serves, as `era` declares them."""
    declared: dict[str, Any] = {"logging": {}}
    if registry.tools:
        declared["tools"] = {"listChanged": True}
    if registry.resources or registry.templates:
        declared["resources"] = {"subscribe": True, "listChanged": True}
    if registry.prompts:
        declared["prompts"] = {"listChanged": True}
    if registry.has_completions():
        declared["completions"] = {}
    extensions: dict[str, Any] = {}
    if "get_job_status" in registry.tools:
        declared["experimental"] = {JOB_EVENTS_EXTENSION: JOB_EVENTS_SETTINGS}
        extensions[JOB_EVENTS_EXTENSION] = JOB_EVENTS_SETTINGS
    if any(spec.task_support for spec in registry.tools.values()):
        if era.modern:
            extensions[TASKS_EXTENSION] = {}
        else:
            declared["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    if extensions:
        declared["extensions"] = extensions
    return declared
