"""JSON Schemas from Python signatures, so a typed function is a complete tool definition.

Pydantic builds the schema (and later converts validated JSON arguments into the
annotated Python types); we only decide which parameters are arguments. A parameter
annotated with `Context` is injected by the server and never appears in the schema.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model
from pydantic.errors import PydanticInvalidForJsonSchema, PydanticUserError

from herald.server.lifespan import FromLifespan


class ArgumentsRejected(ValueError):
    """Arguments that passed the JSON Schema yet cannot become the declared Python values.

    The schema and pydantic mostly agree, but not always (their regex engines differ on a
    few characters, a validator may add rules the schema cannot say), and such arguments
    are still the caller's to correct, not an internal error of the tool.
    """


@dataclass(frozen=True, slots=True)
class Signature:
    """How to call a user function with JSON arguments."""

    schema: dict[str, Any]
    arguments_model: type[BaseModel] | None
    context_parameter: str | None
    parameter_names: tuple[str, ...]
    #: Parameters the server fills from its lifespan (`FromLifespan`), never arguments.
    from_lifespan: tuple[tuple[str, FromLifespan], ...] = ()

    def with_lifespan(self, values: dict[str, Any], state: Any, running: bool) -> dict[str, Any]:
        """`values` with the lifespan's parameters filled in (see `herald.server.lifespan`)."""
        for name, source in self.from_lifespan:
            values[name] = source.resolve(state, running)
        return values

    def convert(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Turn validated JSON arguments into the Python values the function declares."""
        if self.arguments_model is None:
            return dict(arguments)
        try:
            model = self.arguments_model.model_validate(arguments, by_alias=True)
        except ValidationError as exc:
            problems = (
                f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
                for error in exc.errors()
            )
            raise ArgumentsRejected("; ".join(problems)) from None
        return {name: getattr(model, name) for name in self.parameter_names if name in model.model_fields_set}


def read_signature(function: Callable[..., Any], context_type: type | tuple[type, ...]) -> Signature:
    """Derive the argument schema of `function`, skipping its context parameter (of `context_type`)."""
    context_types = context_type if isinstance(context_type, tuple) else (context_type,)
    hints = typing.get_type_hints(function, include_extras=True)
    fields: dict[str, Any] = {}
    context_parameter: str | None = None
    from_lifespan: list[tuple[str, FromLifespan]] = []
    for name, parameter in inspect.signature(function).parameters.items():
        annotation = hints.get(name, Any)
        if any(annotation is wanted for wanted in context_types):
            context_parameter = name
            continue
        source = _lifespan_source(annotation)
        if source is not None:
            from_lifespan.append((name, source))
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{function.__qualname__}: *args and **kwargs cannot be described as arguments")
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[name] = (annotation, default)
    model = create_model(f"{function.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    schema = _without_titles(model.model_json_schema())
    schema.setdefault("properties", {})
    return Signature(schema, model, context_parameter, tuple(fields), tuple(from_lifespan))


def _lifespan_source(annotation: Any) -> FromLifespan | None:
    """The `FromLifespan` in an `Annotated[...]` parameter, if there is one."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return None
    return next((extra for extra in annotation.__metadata__ if isinstance(extra, FromLifespan)), None)


def parameter_of_type(function: Callable[..., Any], wanted: type) -> str | None:
    """The name of `function`'s parameter annotated exactly `wanted`, if it has one."""
    hints = typing.get_type_hints(function, include_extras=True)
    return next((name for name in inspect.signature(function).parameters if hints.get(name) is wanted), None)


@dataclass(frozen=True, slots=True)
class OutputShape:
    """What a tool's return annotation says of its `structuredContent`.

    The handshake era wants an object: a value of any other type goes under `"result"`
    (`wrapped`), as the official SDK and FastMCP do, and `schema` says so. 2026-07-28
    allows any JSON value and any schema, so there the value and `value_schema` go as they are.
    """

    schema: dict[str, Any]
    value_schema: dict[str, Any]
    wrapped: bool
    #: Turns a returned value into the JSON data its schema describes (dates as strings,
    #: models with every field); None where the value is JSON already (`str`, `int`, …).
    serialize: Callable[[Any], Any] | None = None
    #: The annotation when it is a JSON scalar (`str`, …): a value of exactly that type needs no check.
    scalar: type | None = None


#: Return annotations that say nothing a schema could: the tool shapes its own result.
UNDESCRIBED: tuple[Any, ...] = (Any, object, type(None), None)
#: herald's content blocks, which a tool returns as its result's content, not as a value.
CONTENT_BLOCKS: Any = list[dict[str, Any]]


def output_shape_of(function: Callable[..., Any], result_types: tuple[type, ...] = ()) -> OutputShape | None:
    """The output shape of `function`'s return annotation, or None when it gives none.

    None for no annotation, `None`, `Any`, a result object of `result_types` (which the
    tool fills in itself), `list[dict[str, Any]]` (herald's content blocks), or a type
    pydantic cannot describe.
    """
    annotation: Any = typing.get_type_hints(function).get("return")
    if any(annotation is undescribed for undescribed in UNDESCRIBED) or annotation == CONTENT_BLOCKS:
        return None
    if isinstance(annotation, type) and issubclass(annotation, result_types):
        return None
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        value_schema = _without_titles(adapter.json_schema(mode="serialization"))
    except (PydanticUserError, PydanticInvalidForJsonSchema, TypeError):
        return None
    scalar = annotation if annotation in JSON_SCALARS else None
    serialize = None if scalar is not None else _serializer(adapter)  # a scalar is JSON as it is
    if value_schema.get("type") == "object":
        return OutputShape(value_schema, value_schema, wrapped=False, serialize=serialize)
    definitions = value_schema.pop("$defs", None)
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": {"result": value_schema},
        "required": ["result"],
    }
    if definitions is not None:
        wrapper["$defs"] = definitions
        value_schema = {**value_schema, "$defs": definitions}
    return OutputShape(wrapper, value_schema, wrapped=True, serialize=serialize, scalar=scalar)


#: Return annotations whose values are JSON as they are.
JSON_SCALARS: tuple[Any, ...] = (str, int, float, bool)


def _serializer(adapter: TypeAdapter[Any]) -> Callable[[Any], Any]:
    def serialize(value: Any) -> Any:
        return adapter.dump_python(value, mode="json", by_alias=True)

    return serialize


def _without_titles(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop the titles pydantic invents from names; they repeat the property names."""
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "properties" and isinstance(value, dict):
            cleaned[key] = {name: _without_titles(spec) for name, spec in value.items()}
        elif isinstance(value, dict):
            cleaned[key] = _without_titles(value)
        elif isinstance(value, list):
            cleaned[key] = [_without_titles(item) if isinstance(item, dict) else item for item in value]
        else:
            cleaned[key] = value
    return cleaned
