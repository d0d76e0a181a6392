"""The engine of one structured-output run: plan, call, validate, re-ask; both paths.

Per-run state lives on one `_Run` object made for the call; the layer itself holds only its
configuration.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from ..core import (
    Attempt,
    Capabilities,
    ChatClient,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ContentFilterError,
    FinishReason,
    FunctionCallContent,
    IncompleteOutputError,
    ModelBehaviorError,
    OutputError,
    RefusalError,
    TextContent,
    UsageDetails,
    UserError,
)
from ..schema import OutputSchema
from ._strategies import Plan, Strategy, answer_of, plan_request, reask_messages, strategies_for

if TYPE_CHECKING:
    from .structured_output import StructuredOutput

__all__ = ["INFO_KEY", "Run"]

INFO_KEY = "so_middleware.structured_output"


class Run:
    """The state of one structured-output run: its attempts, in locals of one object."""

    def __init__(
        self, inner: ChatClient, feature: StructuredOutput[Any], messages: list[ChatMessage], options: ChatOptions
    ) -> None:
        self.inner = inner
        self.feature = feature
        self.schema = feature.output_schema
        self.messages = messages
        self.options = options
        self._use(getattr(inner, "capabilities", None))
        self.attempts: list[Attempt] = []
        self.final: ChatResponse[Any] | None = None

    def _use(self, capabilities: object) -> None:
        self.capabilities = capabilities if isinstance(capabilities, Capabilities) else Capabilities()
        self.strategies = strategies_for(self.feature.mode, self.capabilities)

    async def _discover(self) -> None:
        """Identify the backend first where the adapter has yet to (see `discover_capabilities`)."""
        discover = getattr(self.inner, "discover_capabilities", None)
        if discover is not None and getattr(self.inner, "discovery_pending", False):
            self._use(await discover())

    # ---------------------------------------------------------------- shared steps

    def _plan(self, strategy: Strategy, messages: list[ChatMessage]) -> Plan:
        return plan_request(
            strategy, self.schema, messages, self.options, self.capabilities, description=self.feature.description
        )

    def _usage(self) -> UsageDetails | None:
        return UsageDetails.total(a.usage for a in self.attempts)

    def _check(self, plan: Plan, response: ChatResponse[Any]) -> tuple[Any, str, FunctionCallContent | None]:
        """Validate one answer; returns (value, raw text, tool call) or raises its OutputError."""
        answer, call = answer_of(plan, response)
        kwargs: dict[str, Any] = {"response": response}
        if response.refusal or response.finish_reason == FinishReason.REFUSAL:
            raise RefusalError(
                f"the model refused: {response.refusal or '(no reason given)'}",
                refusal=response.refusal or "",
                **kwargs,
            )
        if response.finish_reason == FinishReason.CONTENT_FILTER:
            raise ContentFilterError("the answer was withheld by the provider's content filter", **kwargs)
        if response.finish_reason == FinishReason.LENGTH:
            return self._check_truncated(plan, answer, call, kwargs)
        if self.schema.is_plain_text():
            return answer, answer, call
        return self.schema.validate_json(answer, lenient=plan.strategy != "native"), answer, call

    def _check_truncated(
        self, plan: Plan, answer: str, call: FunctionCallContent | None, kwargs: dict[str, Any]
    ) -> tuple[Any, str, FunctionCallContent | None]:
        """A cut-off answer. Constrained output (native, tool) was on its way to a valid value:
        the token limit is the problem, so `IncompleteOutputError`. Unconstrained output often
        holds a complete JSON value followed by rambling: that value counts, but never one
        repaired from a truncated tail (it could hold a cut number or string); without one, the
        answer is invalid and re-asked."""
        if plan.strategy in ("native", "tool") or self.schema.is_plain_text():
            raise IncompleteOutputError(
                f"the answer was cut off at the token limit after {len(answer)} characters; raise max_tokens", **kwargs
            )
        try:
            return self.schema.validate_complete_json(answer), answer, call
        except ModelBehaviorError as error:
            error.response = kwargs["response"]
            raise

    def _record(self, plan: Plan, response: ChatResponse[Any], text: str, error: BaseException | None) -> None:
        self.attempts.append(
            Attempt(len(self.attempts), text, error, response.usage, plan.strategy, response.finish_reason)
        )

    def _next(
        self, plan: Plan, strategy_index: int, answer: str, call: FunctionCallContent | None, error: Exception
    ) -> tuple[int, Plan]:
        """The plan of the next attempt: a re-ask, on the next strategy if this one was ignored."""
        ignored = plan.strategy in ("native", "json_object", "tool") and not answer.lstrip().startswith(("{", "["))
        if ignored and call is None and strategy_index + 1 < len(self.strategies):
            strategy_index += 1  # the backend ignored the constraint: a re-ask would not help
            return strategy_index, self._plan(self.strategies[strategy_index], self.messages)
        history = reask_messages(plan, answer, call, error, plan.tool_name)
        return strategy_index, self._plan(plan.strategy, history)

    def _finish(self, plan: Plan, response: ChatResponse[Any], value: Any, answer: str) -> ChatResponse[Any]:
        info = {
            "name": self.schema.name(),
            "strategy": plan.strategy,
            "attempts": len(self.attempts),
            "outcome": "valid",
        }
        final: ChatResponse[Any] = ChatResponse(
            ChatMessage("assistant", [TextContent(answer)], raw_representation=response.messages),
            usage=self._usage(),
            finish_reason=FinishReason.STOP
            if response.finish_reason == FinishReason.TOOL_CALLS
            else response.finish_reason,
            response_id=response.response_id,
            model_id=response.model_id,
            raw_representation=response.raw_representation,
            additional_properties={**response.additional_properties, INFO_KEY: info},
            attempts=self.attempts,
            value=value,
            response_format=plan.options.response_format,
        )
        self.final = self.feature.response = final
        return final

    def _judge(
        self, plan: Plan, response: ChatResponse[Any], attempt: int, strategy_index: int
    ) -> tuple[ChatResponse[Any] | None, int, Plan]:
        """Accept an answer (the final response), or plan the re-ask; raise when out of attempts
        or when asking again would not help (refusal, truncation, content filter)."""
        try:
            value, answer, call = self._check(plan, response)
        except ModelBehaviorError as error:
            answer, call = answer_of(plan, response)
            self._record(plan, response, answer, error)
            if attempt == self.feature.max_retries:
                raise self._fail(error, "invalid", plan.strategy) from None
            strategy_index, next_plan = self._next(plan, strategy_index, answer, call, error)
            return None, strategy_index, next_plan
        except OutputError as error:
            self._record(plan, response, answer_of(plan, response)[0], error)
            raise self._fail(error, _outcome(error), plan.strategy) from None
        self._record(plan, response, answer, None)
        return self._finish(plan, response, value, answer), strategy_index, plan

    def _fail(self, error: OutputError, outcome: str, strategy: str) -> OutputError:
        error.with_attempts(self.attempts, self._usage())
        info = {"name": self.schema.name(), "strategy": strategy, "attempts": len(self.attempts), "outcome": outcome}
        if isinstance(error.response, ChatResponse):
            error.response.additional_properties[INFO_KEY] = info
            error.response.attempts = list(self.attempts)
        return error

    # ---------------------------------------------------------------- non-streaming

    async def respond(self) -> ChatResponse[Any]:
        await self._discover()
        strategy_index = 0
        plan = self._plan(self.strategies[0], self.messages)
        for attempt in range(self.feature.max_retries + 1):
            response = await self.inner.get_response(plan.messages, options=plan.options)
            final, strategy_index, plan = self._judge(plan, response, attempt, strategy_index)
            if final is not None:
                return final
        raise AssertionError("unreachable: the last attempt returns or raises")

    # ---------------------------------------------------------------- streaming

    async def stream(self) -> AsyncIterator[ChatResponseUpdate[Any]]:
        await self._discover()
        strategy_index = 0
        plan = self._plan(self.strategies[0], self.messages)
        for attempt in range(self.feature.max_retries + 1):
            parser = None if self.schema.is_plain_text() else _Partial(self.schema, lenient=plan.strategy != "native")
            if plan.prefill:
                yield self._update(attempt, plan.prefill, parser)
            inner = self.inner.get_response(plan.messages, options=plan.options, stream=True)
            async with inner:
                async for update in inner:
                    delta = _answer_delta(plan, update)
                    if delta or update.usage or update.finish_reason:
                        yield self._update(attempt, delta, parser, update)
                response = await inner.get_final_response()
            final, strategy_index, plan = self._judge(plan, response, attempt, strategy_index)
            if final is not None:
                return

    def _update(
        self, attempt: int, delta: str, parser: Any, source: ChatResponseUpdate[Any] | None = None
    ) -> ChatResponseUpdate[Any]:
        completed: list[Any] = []
        partial = None
        if parser is not None and not parser.broken and delta:
            try:
                parser.feed(delta)
                completed = list(parser.pop_completed())
            except ModelBehaviorError:
                parser.broken = True  # no partial values for the rest; the final check re-asks
        if parser is not None and not parser.broken:
            partial = parser.value
        return ChatResponseUpdate(
            [TextContent(delta)] if delta else [],
            role="assistant",
            usage=source.usage if source else None,
            finish_reason=source.finish_reason if source else None,
            response_id=source.response_id if source else None,
            model_id=source.model_id if source else None,
            raw_representation=source.raw_representation if source else None,
            attempt=attempt,
            partial_value=partial,
            completed_items=completed,
        )

    async def final_response(self, updates: Sequence[ChatResponseUpdate[Any]]) -> ChatResponse[Any]:
        if self.final is None:
            raise UserError("the structured-output stream ended without a final response")
        return self.final


class _Partial:
    """A partial parser for one attempt, and whether it gave up on this attempt's text."""

    def __init__(self, schema: OutputSchema, *, lenient: bool) -> None:
        self._parser = schema.partial_parser(lenient=lenient)
        self.broken = False

    def feed(self, delta: str) -> None:
        self._parser.feed(delta)

    def pop_completed(self) -> list[Any]:
        return self._parser.pop_completed()

    @property
    def value(self) -> Any:
        return self._parser.value


def _answer_delta(plan: Plan, update: ChatResponseUpdate[Any]) -> str:
    if plan.strategy == "tool":
        return "".join(
            c.arguments
            for c in update.contents
            if isinstance(c, FunctionCallContent) and c.name in ("", plan.tool_name)
        )
    return update.text


def _outcome(error: OutputError) -> str:
    if isinstance(error, RefusalError):
        return "refusal"
    if isinstance(error, IncompleteOutputError):
        return "incomplete"
    if isinstance(error, ContentFilterError):
        return "content_filter"
    return "invalid"
