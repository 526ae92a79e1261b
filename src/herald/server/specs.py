"""Specs from typed functions: what `Server`'s decorators and the job tools register.

A function's type hints and docstring make a complete definition (schemas, description,
the `Context` parameter); anything can be given explicitly instead. Building the spec is
kept apart from `Server`, so code that registers tools of its own (`herald.server.jobs`)
needs only a `Registry`, not the server.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Any

from herald.content import ToolResult
from herald.server.context import Context
from herald.server.files import FILE_PARAMS_META, file_parameters
from herald.server.registry import (
    Completer,
    PromptArgument,
    PromptSpec,
    ResourceSpec,
    ResourceTemplateSpec,
    ToolSpec,
)
from herald.server.signature import output_shape_of, read_signature


def tool_spec(
    function: Callable[..., Any],
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
) -> ToolSpec:
    """A tool of `function`: arguments and output schemas from its type hints unless given.

    An output schema given is taken as it is; one derived from the return annotation wraps
    a value that is not an object as `{"result": value}` (see `OutputShape`).
    """
    signature = read_signature(function, Context)
    if input_schema is not None:
        signature = dataclasses.replace(signature, schema=input_schema, arguments_model=None)
    shape = output_shape_of(function, (ToolResult,)) if output_schema is None else None
    meta = with_file_parameters(meta, function)
    return ToolSpec(
        name=name or function.__name__,
        function=function,
        signature=signature,
        description=description or docstring(function) or (name or function.__name__),
        input_schema=signature.schema,
        output_schema=output_schema if shape is None else shape.schema,
        shape=shape,
        title=title,
        annotations=annotations,
        icons=icons,
        meta=meta,
        task_support=task_support,
        task_preflight=task_preflight,
    )


def with_file_parameters(meta: dict[str, Any] | None, function: Callable[..., Any]) -> dict[str, Any] | None:
    """`meta` naming the parameters of `function` typed `FileRef`, which the host fills with
    the files the person attached (`herald.server.files`)."""
    files = file_parameters(function)
    return {**(meta or {}), FILE_PARAMS_META: files} if files else meta


def resource_spec(
    function: Callable[..., Any],
    uri: str,
    *,
    name: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    title: str | None = None,
    annotations: dict[str, Any] | None = None,
    icons: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
) -> ResourceSpec:
    """A resource at a fixed URI; the function returns str, bytes or JSON data."""
    return ResourceSpec(
        uri=uri,
        name=name or function.__name__,
        function=function,
        context_parameter=context_parameter(function),
        description=description or docstring(function),
        mime_type=mime_type,
        title=title,
        annotations=annotations,
        icons=icons,
        meta=meta,
    )


def template_spec(
    function: Callable[..., Any],
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
) -> ResourceTemplateSpec:
    """A URI template whose variables become the function's keyword arguments."""
    spec = ResourceTemplateSpec(
        uri_template=uri_template,
        name=name or function.__name__,
        function=function,
        context_parameter=context_parameter(function),
        description=description or docstring(function),
        mime_type=mime_type,
        title=title,
        annotations=annotations,
        icons=icons,
        meta=meta,
        completers=dict(complete or {}),
    )
    missing = set(spec.variables) - set(inspect.signature(function).parameters)
    if missing:
        raise TypeError(f"{function.__qualname__} lacks parameters for {sorted(missing)}")
    return spec


def prompt_spec(
    function: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    icons: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
    complete: dict[str, Completer] | None = None,
) -> PromptSpec:
    """A prompt whose string parameters are its arguments."""
    signature = read_signature(function, Context)
    required = set(signature.schema.get("required", []))
    properties: dict[str, Any] = signature.schema.get("properties", {})
    arguments = tuple(
        PromptArgument(argument, properties[argument].get("description"), argument in required)
        for argument in signature.parameter_names
    )
    return PromptSpec(
        name=name or function.__name__,
        function=function,
        signature=signature,
        arguments=arguments,
        description=description or docstring(function),
        title=title,
        icons=icons,
        meta=meta,
        completers=dict(complete or {}),
    )


def docstring(function: Callable[..., Any]) -> str | None:
    """The function's docstring, cleaned, as its description."""
    doc = inspect.getdoc(function)
    return doc.strip() if doc else None


def context_parameter(function: Callable[..., Any]) -> str | None:
    """The parameter annotated `Context`, which the server fills in, if any."""
    hints = typing.get_type_hints(function)
    return next((name for name, hint in hints.items() if hint is Context), None)
