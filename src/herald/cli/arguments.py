"""What a person types for a server: `NAME=VALUE` arguments and URLs, checked before sending.

A value is JSON where the tool's schema does not say it is a string, so `budget=50` is a
number and `recipient=42` stays text. A value that starts with `@` is the content of the
file it names, as curl reads one (`csv=@employees.csv`): a file of any size goes as one
argument, where `"csv=$(cat employees.csv)"` hits the shell's limit on a command line.
`@@` starts a value with a literal `@`. The arguments are then checked against the tool's
`inputSchema` here, so a mistake is named by the argument it is about, as a usage error,
instead of travelling to the server and coming back as a tool error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from herald.cli.problems import UserError

__all__ = ["check_arguments", "checked_url", "parse_arguments", "parse_strings"]


def parse_arguments(pairs: list[str], schema: dict[str, Any]) -> dict[str, Any]:
    """NAME=VALUE pairs to JSON arguments, typed by the tool's input schema."""
    properties = schema.get("properties", {})
    arguments: dict[str, Any] = {}
    for name, value in parse_strings(pairs).items():
        if properties.get(name, {}).get("type") == "string":
            arguments[name] = value
            continue
        try:
            arguments[name] = orjson.loads(value)
        except orjson.JSONDecodeError:
            arguments[name] = value
    return arguments


def check_arguments(tool: str, arguments: dict[str, Any], schema: dict[str, Any]) -> None:
    """A `UserError` naming each argument that breaks the tool's input schema, and what it must be."""
    import jsonschema_rs

    try:
        validator = jsonschema_rs.validator_for(schema)
    except (ValueError, jsonschema_rs.ValidationError):
        return  # a schema the server got wrong: the server is the judge of its own arguments
    problems = [_problem(error, schema) for error in validator.iter_errors(arguments)]
    if problems:
        usage = " ".join(f"--arg {name}=…" for name in schema.get("properties", {}))
        raise UserError(f"wrong arguments for {tool}: " + "; ".join(problems), f"It takes: {usage}".strip())


def _problem(error: Any, schema: dict[str, Any]) -> str:
    path = [str(part) for part in error.instance_path]
    if not path:  # about the arguments as a whole: a missing or an unknown one
        return str(error.message)
    declared = schema.get("properties", {}).get(path[0], {})
    wanted = _described(declared)
    return f"{'.'.join(path)}: {error.message}" + (f" (it must be {wanted})" if wanted else "")


def _described(schema: dict[str, Any]) -> str:
    """What a property's schema asks for, in a few words: `a number from 0 to 100`, `one of a, b`."""
    if "enum" in schema:
        return "one of " + ", ".join(orjson.dumps(value).decode() for value in schema["enum"])
    kind = schema.get("type")
    words = {"integer": "a whole number", "number": "a number", "string": "text", "boolean": "true or false"}
    text = words.get(kind, f"a JSON {kind}") if isinstance(kind, str) else ""
    low, high = schema.get("minimum"), schema.get("maximum")
    if text and low is not None and high is not None:
        text += f" from {low} to {high}"
    elif text and low is not None:
        text += f" of at least {low}"
    elif text and high is not None:
        text += f" of at most {high}"
    return text


def parse_strings(pairs: list[str]) -> dict[str, str]:
    """NAME=VALUE pairs as they are (a prompt's arguments are all strings)."""
    return dict(_pair(pair) for pair in pairs)


def _pair(pair: str) -> tuple[str, str]:
    name, separator, value = pair.partition("=")
    if not separator or not name:
        raise UserError(
            f"argument {pair!r} is not NAME=VALUE", "Write it as --arg budget=50, or --arg csv=@file.csv."
        )
    if value.startswith("@@"):
        return name, value[1:]
    if value.startswith("@"):
        return name, _file_text(name, Path(value[1:]))
    return name, value


def _file_text(name: str, path: Path) -> str:
    """The text of the file `--arg NAME=@PATH` names (UTF-8, with or without a byte-order mark)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(
            f"--arg {name}=@{path}: there is no file {path}", "Write @@ for a value that starts with @."
        ) from None
    except IsADirectoryError:
        raise UserError(f"--arg {name}=@{path}: {path} is a folder, not a file") from None
    except OSError as exc:
        raise UserError(f"--arg {name}=@{path}: cannot read {path} ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(
            f"--arg {name}=@{path}: {path} is not UTF-8 text",
            "Save it as UTF-8 (in a spreadsheet: CSV UTF-8), or pass a file whose text is.",
        ) from None


def checked_url(url: str, option: str = "--url") -> str:
    """`url` when a client can connect to it; what is wrong with it otherwise."""
    import httpx

    example = (
        "e.g. --url http://127.0.0.1:8000/mcp" if option == "--url" else "e.g. http://127.0.0.1:8000/mcp"
    )
    try:
        parts = urlsplit(url)
        scheme, port = parts.scheme, parts.port
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL) as exc:
        raise UserError(f"{option} {url!r} is not a valid URL: {exc}", example) from None
    if scheme not in ("http", "https"):
        raise UserError(f"{option} {url!r} is not an http:// or https:// URL", example)
    if not parts.hostname:
        raise UserError(f"{option} {url!r} names no host", example)
    if port == 0:
        raise UserError(f"{option} {url!r} names port 0, where nothing listens", example)
    return url
