"""`Tool`: a Python function the model may call, and `tool`, the decorator for what a signature can't say."""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from ...core import FunctionTool, UserError
from ...schema import FunctionSchema, function_schema

__all__ = ["Tool", "Tools", "as_tools", "tool"]

# The rule every provider shares (OpenAI's function names; Anthropic's and Gemini's are wider).
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True, eq=False)
class Tool:
    """A function the model may call: its schema, and how to run it.

    Build one with `Tool.of(function)` or the `@tool(...)` decorator; a plain function passed where
    tools are expected becomes `Tool.of(function)`. `timeout` (seconds) bounds one run of it;
    `requires_approval` makes a call of it wait for a decision (`Approvals`).

    Example:
        weather = Tool.of(get_weather, description="The weather now, in a city.")
        weather.name == "get_weather"
    """

    function: Callable[..., Any]
    schema: FunctionSchema
    timeout: float | None = None
    is_async: bool = field(default=False)
    requires_approval: bool = False

    @classmethod
    def of(
        cls,
        function: Callable[..., Any] | Tool,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        requires_approval: bool = False,
    ) -> Tool:
        """The tool for `function`; `UserError` naming the problem if it cannot be one."""
        if isinstance(function, Tool):
            return function
        if not callable(function):
            raise UserError(f"a tool must be a function, not {type(function).__name__}")
        schema = function_schema(function, name=name, description=description)
        if not _NAME.match(schema.name):
            raise UserError(
                f"tool name {schema.name!r} is refused by providers: use 1 to 64 letters, digits, '_' or '-'"
            )
        if timeout is not None and (not isinstance(timeout, int | float) or timeout <= 0):
            raise UserError(f"tool {schema.name!r}: timeout must be a positive number of seconds, not {timeout!r}")
        is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004 - a callable object's own method
        )
        return cls(function, schema, timeout, is_async, bool(requires_approval))

    @property
    def name(self) -> str:
        """The name the model calls it by."""
        return self.schema.name

    def declaration(self) -> FunctionTool:
        """What is sent to the model: name, description, the arguments' schema."""
        return FunctionTool(
            self.name, self.schema.parameters, self.schema.description, True if self.schema.strict else None
        )

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        """Run the function with `arguments` (a sync one on a worker thread, off the event loop)."""
        if self.is_async:
            return await self.function(**arguments)
        return await asyncio.to_thread(functools.partial(self.function, **arguments))

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    requires_approval: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    requires_approval: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make `function` a `Tool`: `@tool` bare, or `@tool(name=..., description=..., timeout=...,
    requires_approval=...)` (a call of it then waits for your decision: see `Approvals`).

    Example:
        @tool(description="Today's date, ISO 8601.")
        def today() -> str:
            return date.today().isoformat()
    """
    if function is not None:
        return Tool.of(function)

    def make(inner: Callable[..., Any]) -> Tool:
        return Tool.of(inner, name=name, description=description, timeout=timeout, requires_approval=requires_approval)

    return make


@dataclass(frozen=True, init=False)
class Tools:
    """A feature: tools for one run, beside the layer's own (`options={"features": [Tools(f, g)]}`)."""

    tools: tuple[Tool, ...]

    def __init__(self, *tools: Callable[..., Any] | Tool) -> None:
        object.__setattr__(self, "tools", tuple(as_tools(tools)))


def as_tools(tools: Iterable[Callable[..., Any] | Tool] | None) -> list[Tool]:
    """Each item as a `Tool`; `UserError` for two tools with one name."""
    found: list[Tool] = []
    for item in tools or ():
        made = Tool.of(item)
        if any(other.name == made.name for other in found):
            raise UserError(f"two tools are named {made.name!r}: give one another name with @tool(name=...)")
        found.append(made)
    return found


def merged(own: Sequence[Tool], more: Sequence[Tool]) -> dict[str, Tool]:
    """The layer's tools and a run's, by name; `UserError` when a name means two functions."""
    by_name = {item.name: item for item in own}
    for item in more:
        known = by_name.get(item.name)
        if known is not None and known.function is not item.function:
            raise UserError(f"two tools are named {item.name!r}: give one another name with @tool(name=...)")
        by_name[item.name] = item
    return by_name
