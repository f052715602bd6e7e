"""Plain Python functions as OpenAI tools: a JSON schema from the type hints, and safe calls.

The schema's description is the docstring's first paragraph; a Google-style ``Args:`` section
describes the parameters. Parameters without a default are required. Supported annotations:
``str``, ``int``, ``float``, ``bool``, ``list[...]``, ``dict[str, ...]``, ``Optional[...]`` /
``X | None``, unions, ``Literal[...]``, ``Enum`` subclasses, and ``Any`` (no annotation means
``str``). A tool that raises does not end the turn: the model is told the error instead.
"""

from __future__ import annotations

import enum
import functools
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .._internal.runtime import offload
from ..errors import InvalidValueError

__all__ = ["Tool", "Toolbox", "function_schema"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?):\s*$")
_ARG_LINE = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


@dataclass(frozen=True)
class Tool:
    """A callable with its schema and the annotations needed to convert arguments back."""

    name: str
    function: Callable[..., Any]
    schema: dict[str, Any]
    enums: dict[str, type[enum.Enum]]
    is_async: bool


def function_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """The OpenAI tool schema (``{"type": "function", "function": {...}}``) of a function."""
    return _make_tool(function).schema


def _make_tool(function: Callable[..., Any]) -> Tool:
    if not callable(function):
        raise InvalidValueError(f"tools must be functions, got {function!r}.")
    name = _name_of(function)
    target = function.func if isinstance(function, functools.partial) else function
    try:
        hints = typing.get_type_hints(target)
    except Exception as exc:  # a forward reference that does not resolve
        raise InvalidValueError(f"Cannot read the type hints of tool {name!r}: {exc}") from None
    signature = inspect.signature(function)
    summary, arg_docs = _parse_docstring(inspect.getdoc(function) or "")
    properties: dict[str, Any] = {}
    required: list[str] = []
    enums: dict[str, type[enum.Enum]] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise InvalidValueError(
                f"Tool {name!r} takes *{param.name}; tools need named parameters only, so that "
                "the model knows what to pass."
            )
        annotation = hints.get(param.name, inspect.Parameter.empty)
        prop = _schema_for(annotation, f"{name}({param.name})")
        base = _strip_optional(annotation)
        if isinstance(base, type) and issubclass(base, enum.Enum):
            enums[param.name] = base
        if param.name in arg_docs:
            prop = {**prop, "description": arg_docs[param.name]}
        properties[param.name] = prop
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    parameters["required"] = required
    schema = {
        "type": "function",
        "function": {"name": name, "description": summary or name, "parameters": parameters},
    }
    method = None if inspect.isroutine(target) else type(target).__dict__.get("__call__")
    is_async = inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(method)
    return Tool(name, function, schema, enums, is_async)


def _name_of(function: Callable[..., Any]) -> str:
    target = function.func if isinstance(function, functools.partial) else function
    name = getattr(target, "__name__", None) or type(target).__name__
    if not _NAME.match(name):
        raise InvalidValueError(
            f"Tool name {name!r} is not allowed: use 1-64 letters, digits, '_' or '-' "
            "(define the tool with def, not lambda)."
        )
    return name


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph (one line) and the ``Args:`` descriptions of a docstring."""
    lines = doc.splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()):
            break
        summary.append(line.strip())
    args: dict[str, str] = {}
    in_args = False
    current: str | None = None
    args_indent = 0
    for line in lines:
        header = _SECTION.match(line.strip())
        if header:
            in_args = header.group(1) in ("Args", "Arguments", "Parameters", "Params")
            current = None
            continue
        if not in_args or not line.strip():
            continue
        match = _ARG_LINE.match(line)
        indent = len(line) - len(line.lstrip())
        if match and (current is None or indent <= args_indent):
            current, args_indent = match.group(1), indent
            args[current] = match.group(2).strip()
        elif current is not None:
            args[current] = f"{args[current]} {line.strip()}".strip()
    return " ".join(summary), args


def _strip_optional(annotation: Any) -> Any:
    if _is_union(annotation):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return members[0]
    return annotation


def _is_union(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    return origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType)


def _schema_for(annotation: Any, where: str) -> dict[str, Any]:
    if annotation is inspect.Parameter.empty:
        return {"type": "string"}
    if annotation is Any or annotation is object:
        return {}
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    if _is_union(annotation):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return _schema_for(members[0], where)
        return {"anyOf": [_schema_for(m, where) for m in members]}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        values = [member.value for member in annotation]
        return {**_type_of_values(values), "enum": values}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return {**_type_of_values(list(args)), "enum": list(args)}
    if annotation in (list, tuple, set) or origin in (list, tuple, set, frozenset):
        homogeneous = len(args) == 1 or (len(args) == 2 and args[1] is Ellipsis)
        items = args[0] if homogeneous else None
        return {"type": "array", **({"items": _schema_for(items, where)} if items else {})}
    if annotation is dict or origin is dict:
        schema: dict[str, Any] = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            schema["additionalProperties"] = _schema_for(args[1], where)
        return schema
    raise InvalidValueError(
        f"Tool parameter {where} has the annotation {annotation!r}, which has no JSON schema "
        "here. Use str, int, float, bool, list, dict, Optional, Literal or an Enum."
    )


def _type_of_values(values: list[Any]) -> dict[str, Any]:
    kinds = {_SCALARS.get(type(v)) for v in values}
    return {"type": kinds.pop()} if len(kinds) == 1 and None not in kinds else {}


class Toolbox:
    """The tools of one agent, by name: their schemas, and running the calls a model makes."""

    def __init__(self, functions: Iterable[Callable[..., Any]] = ()) -> None:
        self.tools: dict[str, Tool] = {}
        for function in functions:
            tool = _make_tool(function)
            if tool.name in self.tools:
                raise InvalidValueError(
                    f"Two tools are named {tool.name!r}; tool names must be unique."
                )
            self.tools[tool.name] = tool
        self.schemas = [tool.schema for tool in self.tools.values()]
        self.has_async = any(tool.is_async for tool in self.tools.values())

    def __bool__(self) -> bool:
        return bool(self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    async def run(self, name: str, arguments: str) -> str:
        """Call one tool; whatever goes wrong comes back as text for the model to read."""
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(self.tools) or "none"
            return f"Error: there is no tool named {name!r}. Available tools: {known}."
        try:
            kwargs = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            return f"Error: the arguments for {name!r} are not valid JSON ({exc}). Try again."
        if not isinstance(kwargs, dict):
            return f"Error: the arguments for {name!r} must be a JSON object."
        try:
            for key, enum_type in tool.enums.items():
                if key in kwargs and kwargs[key] is not None:
                    kwargs[key] = enum_type(kwargs[key])
            if tool.is_async:
                result = await tool.function(**kwargs)
            else:
                result = await offload(functools.partial(tool.function, **kwargs))
        except Exception as exc:
            _logger().warning("Tool %r raised %s: %s", name, type(exc).__name__, exc)
            return f"Error: the tool {name!r} raised {type(exc).__name__}: {exc}"
        return _as_text(result)


def _as_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    if isinstance(result, enum.Enum):
        result = result.value
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)


def _logger() -> Any:
    import logging

    return logging.getLogger("praisonsession")
