"""Structured output: the layer that fulfils a `StructuredOutput` feature.

    client = with_structured_output(client)                        # per run:
    response = await client.get_response("...", output_type=Person)
    response = await client.get_response("...", options={"features": [StructuredOutput(Person)]})
    client = with_structured_output(client, Person, max_retries=3)  # or once, at creation
    client = with_structured_output(client, strategies=[Native(), Prompted()])  # this client's strategies

The per-run feature wins over the creation-time one. Without either, the layer is a pure
pass-through. Every answer is validated, whatever the strategy; an invalid one is re-asked with
the validation errors, up to `max_retries` times. An answer that shows the backend ignored the
strategy moves the run to the next one without spending a re-ask, and the layer remembers it
(`learned`, `capabilities`) so later runs start where it worked. Refusals, truncation and
content filtering raise their own errors at once. Every error carries all attempts and the
summed usage.

Background runs (`options={"background": True}`): a `LONG_RUNNING` answer is returned as it is,
with its `continuation_token`, never validated or re-asked; the poll or resumed stream that
completes the run (`get_response(continuation_token=..., output_type=T)`) is validated then. Such
a run is never re-asked or moved to another strategy (that would start a second job): an invalid
answer raises at once, with its attempt.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, overload

from typing_extensions import TypeVar

from ...core import (
    Capabilities,
    ChatClient,
    ChatResponse,
    ChatStream,
    DefaultTyped,
    DelegatingChatClient,
    LayerCall,
    ResponseStream,
    UserError,
    as_chat_client,
    as_messages,
    check_sendable,
)
from ..retries import CallRetries, RetriesEachCall
from ..strategies import DEFAULT_STRATEGIES, Mode, Strategy, check_strategies, mode_names
from ._feature import StructuredOutput, feature_for, retries_in, without
from ._learned import Learned, Lesson, route_of
from ._run import StructuredRun
from ._settings import OutputSettings, SettingsKeywords

__all__ = [
    "Lesson",
    "OutputSettings",
    "SettingsKeywords",
    "StructuredOutput",
    "StructuredOutputChatClient",
    "with_structured_output",
]


T = TypeVar("T")
D = TypeVar("D", default=Any)  # the type given at creation; Any for a client made without one


class StructuredOutputChatClient(DefaultTyped[D], DelegatingChatClient, RetriesEachCall):
    """The layer that turns a `StructuredOutput` feature into a validated, typed response.

    Made with a type (`with_structured_output(client, Person)`), it is a
    `StructuredOutputChatClient[Person]`: a call without `output_type` gives a `ChatResponse[Person]`
    to a type checker too.

    `settings` (an `OutputSettings`: name, description, strict, mode, max_retries) apply to runs
    that give only `output_type=`; `default` is the creation-time feature used when a run asks for
    nothing. `strategies` is this client's list of strategies, in the order `auto` tries them
    (`DEFAULT_STRATEGIES` when not given); a run's `mode` names one of them. What runs learn
    about the backend is on `learned` (and reflected in `capabilities`); `reset_learned()`
    forgets it. Under a retry layer it retries each of its model calls itself (`RetriesEachCall`):
    a fault during a re-ask retries that call, not the run.
    """

    def __init__(
        self,
        inner: ChatClient | Any,
        default: StructuredOutput[Any] | None = None,
        settings: OutputSettings | None = None,
        *,
        strategies: Sequence[Strategy] | None = None,
    ) -> None:
        super().__init__(inner)
        settings = OutputSettings() if settings is None else settings
        if not isinstance(settings, OutputSettings):
            raise UserError(f"settings must be an OutputSettings, got {type(settings).__name__}")
        listed = DEFAULT_STRATEGIES if strategies is None else check_strategies(strategies)
        for mode in {settings.mode, *([default.mode] if default is not None else [])}:
            if mode not in mode_names(listed):  # refused now, not at the first call
                raise UserError(f"unknown mode {mode!r}; expected one of {', '.join(mode_names(listed))}")
        self._self_default = default
        self._self_settings = settings
        self._self_strategies = listed
        self._self_learned = Learned()

    @property
    def strategies(self) -> tuple[Strategy, ...]:
        """This client's strategies, in the order `mode="auto"` tries them."""
        return self._self_strategies

    @property
    def learned(self) -> Mapping[tuple[str, str | None], Lesson]:
        """What runs learned, per (route, model): the strategies the backend ignored, the one that
        worked, why (`evidence`: the answer that showed each ignored) and when (`learned_at`). A
        lesson is forgotten after an hour or 1,000 runs that started from it (the first strategy
        is probed again).

        Example: `client.learned[("OpenAIResponsesClient", "m")].ignored == {"native", "tool"}`.
        """
        return self._self_learned.view()

    def reset_learned(self) -> None:
        """Forget what runs learned: the next run starts again at the profile's first strategy."""
        self._self_learned.clear()

    @property
    def capabilities(self) -> Capabilities:
        """The inner client's profile, without the strategies runs found ignored (for its default model)."""
        capabilities = getattr(self.__wrapped__, "capabilities", None)
        capabilities = capabilities if isinstance(capabilities, Capabilities) else Capabilities()
        key = (route_of(self.__wrapped__), getattr(self.__wrapped__, "model", None))
        named = {strategy.name: strategy for strategy in self._self_strategies}
        for name in sorted(self._self_learned.get(key).ignored):
            capabilities = named[name].turned_off(capabilities) if name in named else capabilities
        return capabilities

    def respond(self, call: LayerCall) -> Awaitable[ChatResponse[Any]]:
        """Like any ChatClient; `output_type=T` is a shortcut for a per-run `StructuredOutput(T)`."""
        run, retries = self._run(call)
        if run is not None:
            return run.respond()
        return super().respond(call) if retries is None else retries.respond(self._inner(call, retries))

    def stream(self, call: LayerCall) -> ChatStream:
        """The same, streamed: each model call's updates, then the validated response."""
        run, retries = self._run(call)
        if run is not None:
            return ResponseStream(run.steps(), run.final_response)
        return super().stream(call) if retries is None else retries.stream(self._inner(call, retries))

    def _inner(self, call: LayerCall, retries: CallRetries) -> Callable[..., Any]:
        """A call that asks for no structured output, passed on (a retry layer above left its
        retrying to this layer)."""
        options = without(call.options, retries)
        return functools.partial(self.__wrapped__.get_response, call.messages, options=options)

    def _run(self, call: LayerCall) -> tuple[StructuredRun | None, CallRetries | None]:
        """The run this call asks for (None for a call that asks for no structured output), and
        the retries a retry layer above left to this layer."""
        options = call.options
        features = options.features  # read once: the run's options are made from the same list
        retries = retries_in(features)
        feature = feature_for(features, call.output_type, self._self_settings, self._self_default)
        if feature is None:
            return None, retries
        messages = as_messages(call.messages)  # refused before the first call: it would be paid for
        check_sendable(messages, options)
        learned, strategies = self._self_learned, self._self_strategies
        run = StructuredRun(self.__wrapped__, feature, messages, options, learned, strategies, retries, features)
        return run, retries


@overload
def with_structured_output(
    client: ChatClient | Any,
    output_type: type[T],
    *,
    schema: None = None,
    name: str | None = None,
    description: str | None = None,
    strict: bool | None = None,
    mode: Mode = "auto",
    max_retries: int = 2,
    strategies: Sequence[Strategy] | None = None,
    **adapter_options: Any,
) -> StructuredOutputChatClient[T]: ...
@overload
def with_structured_output(
    client: ChatClient | Any,
    output_type: Any = None,
    *,
    schema: dict[str, Any] | None = None,
    name: str | None = None,
    description: str | None = None,
    strict: bool | None = None,
    mode: Mode = "auto",
    max_retries: int = 2,
    strategies: Sequence[Strategy] | None = None,
    **adapter_options: Any,
) -> StructuredOutputChatClient[Any]: ...
def with_structured_output(
    client: ChatClient | Any,
    output_type: Any = None,
    *,
    schema: dict[str, Any] | None = None,
    name: str | None = None,
    description: str | None = None,
    strict: bool | None = None,
    mode: Mode = "auto",
    max_retries: int = 2,
    strategies: Sequence[Strategy] | None = None,
    **adapter_options: Any,
) -> StructuredOutputChatClient[Any]:
    """Wrap `client` (a ChatClient, or a raw `OpenAI`/`AsyncOpenAI`/`Anthropic`/`AsyncAnthropic`)
    with the structured-output layer.

    `output_type` (or `schema`) sets a creation-time default (a class given here types the
    client: `StructuredOutputChatClient[Person]`, whose `.value` is a `Person` without
    `output_type=` in the call); `name`, `description`, `strict`,
    `mode` and `max_retries` (the fields of `OutputSettings`, same defaults) are defaults for
    every run. `strategies` is this client's list of strategies (`DEFAULT_STRATEGIES` if not
    given). For a raw SDK client, `model=...` (and for OpenAI `api="responses"`) choose the adapter.

    Example:
        client = with_structured_output(AsyncOpenAI(), model="gpt-4o-mini")
        (await client.get_response("Ada, 36", output_type=Person)).value
    """
    inner = as_chat_client(client, **adapter_options) if adapter_options else client
    settings = OutputSettings(name=name, description=description, strict=strict, mode=mode, max_retries=max_retries)
    default = None
    if output_type is not None or schema is not None:
        default = StructuredOutput(output_type, schema=schema, **dataclasses.asdict(settings))
    return StructuredOutputChatClient(inner, default, settings, strategies=strategies)
