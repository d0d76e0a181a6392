"""Structured output: the `StructuredOutput` feature and the layer that fulfils it.

    client = with_structured_output(client)                        # per run:
    response = await client.get_response("...", output_type=Person)
    response = await client.get_response("...", options={"features": [StructuredOutput(Person)]})
    client = with_structured_output(client, Person, max_retries=3)  # or once, at creation

The per-run feature wins over the creation-time one. Without either, the layer is a pure
pass-through. Every answer is validated, whatever the strategy; an invalid one is re-asked with
the validation errors, up to `max_retries` times. Refusals, truncation and content filtering
raise their own errors at once (asking again would not help). Every error carries all attempts
and the summed usage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any, Generic, Literal, TypeVar, overload

from .._client import Capabilities, ChatClient, ChatStream, Feature, as_chat_client
from .._delegating import DelegatingChatClient
from .._exceptions import (
    ContentFilterError,
    IncompleteOutputError,
    ModelBehaviorError,
    OutputError,
    RefusalError,
    UserError,
)
from .._options import ChatOptions, OptionsInput
from .._stream import ResponseStream
from .._types import (
    Attempt,
    ChatMessage,
    ChatResponse,
    ChatResponseUpdate,
    FinishReason,
    FunctionCallContent,
    MessageInput,
    TextContent,
    UsageDetails,
    as_messages,
)
from ..schema import OutputSchema
from ._strategies import MODES, Mode, Plan, Strategy, answer_of, plan_request, reask_messages, strategies_for

__all__ = ["INFO_KEY", "StructuredOutput", "StructuredOutputChatClient", "with_structured_output"]

T = TypeVar("T")
INFO_KEY = "so_middleware.structured_output"


class StructuredOutput(Feature, Generic[T]):
    """Ask for a typed answer: a feature for `options={"features": [StructuredOutput(Person)]}`.

    `output_type` is any type `OutputSchema` takes (a pydantic model, a dataclass, `list[int]`,
    an `Enum`, a union, ...); `schema` a raw JSON-schema dict for types known only at run time.
    `mode` is `auto`, `native`, `tool`, `json_object` or `prompted`. A type that cannot be
    used raises `UserError` here, before any call. After the run, `feature.response` holds the
    response, so a caller that only handed the feature down still gets its answer.

    Example:
        feature = StructuredOutput(list[int], max_retries=1)
        await agent.run("three primes", options={"features": [feature]})
        feature.response.value  # [2, 3, 5]
    """

    handled_by = "with_structured_output"

    def __init__(
        self,
        output_type: type[T] | Any = None,
        *,
        schema: dict[str, Any] | None = None,
        name: str | None = None,
        description: str | None = None,
        strict: bool = True,
        mode: Mode = "auto",
        max_retries: int = 2,
    ) -> None:
        if (output_type is None) == (schema is None):
            raise UserError("StructuredOutput needs exactly one of output_type=... or schema={...}")
        if mode not in MODES:
            raise UserError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise UserError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        self.output_type = output_type if schema is None else schema
        self.output_schema = OutputSchema(self.output_type, strict=strict, name=name)
        self.name = name
        self.description = description
        self.strict = strict
        self.mode: Mode = mode
        self.max_retries = max_retries
        self.response: ChatResponse[T] | None = None

    def copy_for_run(self) -> StructuredOutput[T]:
        """A fresh feature with the same settings (the creation-time default is never written to)."""
        clone: StructuredOutput[T] = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.response = None
        return clone

    def __repr__(self) -> str:
        return f"StructuredOutput({self.output_schema.name()}, mode={self.mode!r}, max_retries={self.max_retries})"


class StructuredOutputChatClient(DelegatingChatClient):
    """The layer that turns a `StructuredOutput` feature into a validated, typed response.

    `settings` (name, description, strict, mode, max_retries) apply to runs that give only
    `output_type=`; `default` is the creation-time feature used when a run asks for nothing.
    """

    def __init__(
        self, inner: ChatClient | Any, default: StructuredOutput[Any] | None = None, **settings: Any
    ) -> None:
        super().__init__(inner)
        if settings:
            StructuredOutput(str, **settings)  # validates the settings now, not at the first call
        self._self_default = default
        self._self_settings = settings

    @overload
    def get_response(
        self,
        messages: MessageInput,
        *,
        options: OptionsInput = None,
        stream: Literal[False] = False,
        output_type: Any = None,
    ) -> Awaitable[ChatResponse[Any]]: ...

    @overload
    def get_response(
        self, messages: MessageInput, *, options: OptionsInput = None, stream: Literal[True], output_type: Any = None
    ) -> ChatStream: ...

    def get_response(
        self, messages: MessageInput, *, options: OptionsInput = None, stream: bool = False, output_type: Any = None
    ) -> Awaitable[ChatResponse[Any]] | ChatStream:
        """Like any ChatClient; `output_type=T` is a shortcut for a per-run `StructuredOutput(T)`."""
        chat_options = ChatOptions.coerce(options)
        feature = self._feature_for(chat_options, output_type)
        if feature is None:
            return self.__wrapped__.get_response(messages, options=options, stream=stream)  # type: ignore[no-any-return]
        others = [f for f in chat_options.features if f is not feature]
        run = _Run(self.__wrapped__, feature, as_messages(messages), chat_options.with_features(others))
        if stream:
            return ResponseStream(run.stream(), run.final_response)
        return run.respond()

    def _feature_for(self, options: ChatOptions, output_type: Any) -> StructuredOutput[Any] | None:
        given = [f for f in options.features if isinstance(f, StructuredOutput)]
        if len(given) > 1:
            raise UserError("more than one StructuredOutput feature in the options; pass one")
        if given and output_type is not None:
            raise UserError("pass either output_type=... or a StructuredOutput feature, not both")
        if given:
            return given[0]
        if output_type is not None:
            return StructuredOutput(output_type, **self._self_settings)
        default = self._self_default
        return default.copy_for_run() if default is not None else None


class _Run:
    """The state of one structured-output run: its attempts, in locals of one object."""

    def __init__(self, inner: ChatClient, feature: StructuredOutput[Any], messages: list[ChatMessage], options: ChatOptions) -> None:
        self.inner = inner
        self.feature = feature
        self.schema = feature.output_schema
        self.messages = messages
        self.options = options
        capabilities = getattr(inner, "capabilities", None)
        self.capabilities = capabilities if isinstance(capabilities, Capabilities) else Capabilities()
        self.strategies = strategies_for(feature.mode, self.capabilities)
        self.attempts: list[Attempt] = []
        self.final: ChatResponse[Any] | None = None

    # ---------------------------------------------------------------- shared steps

    def _plan(self, strategy: Strategy, messages: list[ChatMessage]) -> Plan:
        return plan_request(strategy, self.schema, messages, self.options, self.capabilities, description=self.feature.description)

    def _usage(self) -> UsageDetails | None:
        return UsageDetails.total(a.usage for a in self.attempts)

    def _check(self, plan: Plan, response: ChatResponse[Any]) -> tuple[Any, str, FunctionCallContent | None]:
        """Validate one answer; returns (value, raw text, tool call) or raises its OutputError."""
        answer, call = answer_of(plan, response)
        kwargs: dict[str, Any] = {"response": response}
        if response.refusal or response.finish_reason == FinishReason.REFUSAL:
            raise RefusalError(f"the model refused: {response.refusal or '(no reason given)'}", refusal=response.refusal or "", **kwargs)
        if response.finish_reason == FinishReason.CONTENT_FILTER:
            raise ContentFilterError("the answer was withheld by the provider's content filter", **kwargs)
        if response.finish_reason == FinishReason.LENGTH:
            raise IncompleteOutputError(
                f"the answer was cut off at the token limit after {len(answer)} characters; raise max_tokens", **kwargs
            )
        if self.schema.is_plain_text():
            return answer, answer, call
        return self.schema.validate_json(answer, lenient=plan.strategy != "native"), answer, call

    def _record(self, plan: Plan, response: ChatResponse[Any], text: str, error: BaseException | None) -> None:
        self.attempts.append(
            Attempt(len(self.attempts), text, error, response.usage, plan.strategy, response.finish_reason)
        )

    def _next(self, plan: Plan, strategy_index: int, answer: str, call: FunctionCallContent | None, error: Exception) -> tuple[int, Plan]:
        """The plan of the next attempt: a re-ask, on the next strategy if this one was ignored."""
        ignored = plan.strategy in ("native", "json_object", "tool") and not answer.lstrip().startswith(("{", "["))
        if ignored and call is None and strategy_index + 1 < len(self.strategies):
            strategy_index += 1  # the backend ignored the constraint: a re-ask would not help
            return strategy_index, self._plan(self.strategies[strategy_index], self.messages)
        history = reask_messages(plan, answer, call, error, plan.tool_name)
        return strategy_index, self._plan(plan.strategy, history)

    def _finish(self, plan: Plan, response: ChatResponse[Any], value: Any, answer: str) -> ChatResponse[Any]:
        info = {"name": self.schema.name(), "strategy": plan.strategy, "attempts": len(self.attempts), "outcome": "valid"}
        final: ChatResponse[Any] = ChatResponse(
            ChatMessage("assistant", [TextContent(answer)], raw_representation=response.messages),
            usage=self._usage(),
            finish_reason=FinishReason.STOP if response.finish_reason == FinishReason.TOOL_CALLS else response.finish_reason,
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

    def _fail(self, error: OutputError, outcome: str, strategy: str) -> OutputError:
        error.with_attempts(self.attempts, self._usage())
        info = {"name": self.schema.name(), "strategy": strategy, "attempts": len(self.attempts), "outcome": outcome}
        if isinstance(error.response, ChatResponse):
            error.response.additional_properties[INFO_KEY] = info
            error.response.attempts = list(self.attempts)
        return error

    # ---------------------------------------------------------------- non-streaming

    async def respond(self) -> ChatResponse[Any]:
        strategy_index = 0
        plan = self._plan(self.strategies[0], self.messages)
        for attempt in range(self.feature.max_retries + 1):
            response = await self.inner.get_response(plan.messages, options=plan.options)
            try:
                value, answer, call = self._check(plan, response)
            except ModelBehaviorError as error:
                answer, call = answer_of(plan, response)
                self._record(plan, response, answer, error)
                if attempt == self.feature.max_retries:
                    raise self._fail(error, "invalid", plan.strategy) from None
                strategy_index, plan = self._next(plan, strategy_index, answer, call, error)
                continue
            except OutputError as error:
                self._record(plan, response, answer_of(plan, response)[0], error)
                raise self._fail(error, _outcome(error), plan.strategy) from None
            self._record(plan, response, answer, None)
            return self._finish(plan, response, value, answer)
        raise AssertionError("unreachable")

    # ---------------------------------------------------------------- streaming

    async def stream(self) -> AsyncIterator[ChatResponseUpdate[Any]]:
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
            try:
                value, answer, call = self._check(plan, response)
            except ModelBehaviorError as error:
                answer, call = answer_of(plan, response)
                self._record(plan, response, answer, error)
                if attempt == self.feature.max_retries:
                    raise self._fail(error, "invalid", plan.strategy) from None
                strategy_index, plan = self._next(plan, strategy_index, answer, call, error)
                continue
            except OutputError as error:
                self._record(plan, response, answer_of(plan, response)[0], error)
                raise self._fail(error, _outcome(error), plan.strategy) from None
            self._record(plan, response, answer, None)
            self._finish(plan, response, value, answer)
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
            c.arguments for c in update.contents if isinstance(c, FunctionCallContent) and c.name in ("", plan.tool_name)
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


def with_structured_output(
    client: ChatClient | Any,
    output_type: Any = None,
    *,
    schema: dict[str, Any] | None = None,
    name: str | None = None,
    description: str | None = None,
    strict: bool = True,
    mode: Mode = "auto",
    max_retries: int = 2,
    **adapter_options: Any,
) -> StructuredOutputChatClient:
    """Wrap `client` (a ChatClient, or a raw `OpenAI`/`AsyncOpenAI`/`Anthropic`/`AsyncAnthropic`)
    with the structured-output layer.

    `output_type` (or `schema`) sets a creation-time default; `name`, `strict`, `mode` and
    `max_retries` are defaults for every run. For a raw SDK client, `model=...` (and for OpenAI
    `api="responses"`) choose the adapter.

    Example:
        client = with_structured_output(AsyncOpenAI(), model="gpt-4o-mini")
        (await client.get_response("Ada, 36", output_type=Person)).value
    """
    inner = as_chat_client(client, **adapter_options) if adapter_options else client
    settings: dict[str, Any] = {"name": name, "description": description, "strict": strict, "mode": mode, "max_retries": max_retries}
    default = None
    if output_type is not None or schema is not None:
        default = StructuredOutput(output_type, schema=schema, **settings)
    return StructuredOutputChatClient(inner, default, **settings)
