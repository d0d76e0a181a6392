"""Running one answer's tool calls: validation, timeouts, concurrency, errors as results, spans."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ...core import FunctionCallContent, FunctionResultContent, ModelBehaviorError, UserError, redact
from ._approvals import declined
from ._records import Run, ToolActivity, tool_scope
from ._tools import Tool

__all__ = ["Calls", "check_bounds"]

_log = logging.getLogger("so_middleware")


@dataclass(frozen=True)
class Calls:
    """How a layer runs calls: at most `max_calls` per answer, `concurrency` at a time, each within
    its tool's timeout or `tool_timeout`; `detailed` puts an exception's message in its result;
    `content` logs each call's arguments and result (or error text)."""

    max_calls: int
    tool_timeout: float | None
    concurrency: int
    detailed: bool
    tracer_provider: Any = None  # OpenTelemetry's; None: the global one
    content: bool = False

    async def run_calls(
        self, run: Run, calls: list[FunctionCallContent], iteration: int
    ) -> list[FunctionResultContent]:
        """Run one answer's calls (in order, or together up to the concurrency), results in the model's order."""
        too_many = len(calls) > self.max_calls
        limit = asyncio.Semaphore(self.concurrency)

        async def one(call: FunctionCallContent) -> FunctionResultContent:
            async with limit:
                return await self._run_one(run, call, iteration, too_many=too_many)

        run.repeats = 0
        if self.concurrency == 1:
            return [await one(call) for call in calls]
        return list(await asyncio.gather(*(one(call) for call in calls)))

    async def _run_one(
        self, run: Run, call: FunctionCallContent, iteration: int, *, too_many: bool
    ) -> FunctionResultContent:
        started = time.perf_counter()
        result: str | None = None
        error: str | None = None
        budget = run.budget
        nested: list[ToolActivity] = []  # the tool calls of a run inside this one (an agent as a tool)
        found = run.tools.get(call.name)
        with _tool_span(call, self.tracer_provider):
            if too_many:
                error = f"Error: {self.max_calls} calls at most per answer; ask for fewer at once."
            elif found is None:
                error = f"Error: there is no tool named {call.name!r}. The tools: {', '.join(sorted(run.tools))}."
            elif budget.max_tool_calls is not None and budget.spent_tool_calls >= budget.max_tool_calls:
                raise run.fail(f"the budget of {budget.max_tool_calls} tool calls is spent (ToolBudget)", "budget")
            elif (refusal := declined(call, run.approvals, found)) is not None:
                error = refusal.result_text
            elif (key := _key(call)) in run.answered:  # asked again with the same arguments: it has the answer
                result = run.answered[key]
                run.repeats += 1
            else:
                budget.spent_tool_calls += 1
                with tool_scope(budget, nested):
                    result, error = await self._invoke(found, call)
                if error is None and result is not None:
                    run.answered[key] = result
        seconds = time.perf_counter() - started
        activity = ToolActivity(
            call.name, call.call_id, call.arguments, result, error, seconds, iteration, tuple(nested)
        )
        run.activities.append(activity)
        _logged(activity, self.content)
        text = error if error is not None else result
        return FunctionResultContent(call.call_id, text or "", is_error=error is not None, name=call.name)

    async def _invoke(self, found: Tool, call: FunctionCallContent) -> tuple[str | None, str | None]:
        """(result, None) or (None, the error text for the model)."""
        try:
            arguments = found.schema.validate_arguments(call.arguments)
        except ModelBehaviorError as exc:
            return None, f"Error: invalid arguments for {found.name}: {_problems(exc)} Call it again, fixed."
        timeout = found.timeout if found.timeout is not None else self.tool_timeout
        try:
            value = await asyncio.wait_for(found.invoke(arguments), timeout)
        except TimeoutError:
            return None, f"Error: {found.name} did not finish within {timeout:g} s."
        except Exception as exc:  # the tool's own failure goes back to the model
            detail = f": {type(exc).__name__}: {_first_line(exc)}" if self.detailed else "."
            return None, f"Error: {found.name} failed{detail}"
        return found.schema.result_text(value), None


def _logged(activity: ToolActivity, content: bool) -> None:
    """One `tool` record per call (logger `so_middleware`, INFO): name, call id, iteration, duration,
    outcome; the arguments and the result or error text only with `content` (credentials redacted)."""
    if not _log.isEnabledFor(logging.INFO):
        return
    fields: dict[str, Any] = {
        "event": "tool",
        "name": activity.name,
        "call_id": activity.call_id,
        "iteration": activity.iteration,
        "duration": round(activity.seconds, 6),
        "outcome": "error" if activity.error is not None else "ok",
    }
    if content:
        fields.update(arguments=redact(activity.arguments), result=redact(activity.error or activity.result or ""))
    text = " ".join(f"{key}={value}" for key, value in fields.items() if key != "event")
    _log.info("tool %s", text, extra={"so_middleware": fields})


def check_bounds(*, tool_timeout: float | None, **counts: int) -> None:
    """`UserError` naming a bound that is not a positive int (or, for the timeout, seconds or None)."""
    for name, value in counts.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise UserError(f"{name} must be a positive int, not {value!r}")
    if tool_timeout is not None and (not isinstance(tool_timeout, int | float) or tool_timeout <= 0):
        raise UserError(f"tool_timeout must be a positive number of seconds or None, not {tool_timeout!r}")


def _key(call: FunctionCallContent) -> tuple[str, str]:
    """A call's name and arguments, the same however the JSON is spaced or ordered."""
    try:
        return call.name, json.dumps(json.loads(call.arguments or "{}"), sort_keys=True)
    except ValueError:
        return call.name, call.arguments


def _problems(exc: BaseException) -> str:
    """What is wrong with the arguments, without the echo of the arguments themselves."""
    lines = [line for line in str(exc).strip().splitlines() if not line.startswith("Output was:")]
    text = " ".join(line.strip() for line in lines[1:6] if line.strip()) or (lines[0] if lines else "")
    return text if len(text) <= 500 else text[:497] + "..."


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


@contextlib.contextmanager
def _tool_span(call: FunctionCallContent, provider: Any) -> Iterator[None]:
    """An OpenTelemetry GenAI `execute_tool` span around one call, when OpenTelemetry is installed:
    a child of the span current when the tool runs (the agent's, the chat call's)."""
    try:
        from opentelemetry import trace
    except ImportError:
        yield
        return
    tracer = trace.get_tracer("so_middleware", tracer_provider=provider)
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.call_id,
        "gen_ai.tool.type": "function",
    }
    with tracer.start_as_current_span(f"execute_tool {call.name}", attributes=attributes):
        yield
