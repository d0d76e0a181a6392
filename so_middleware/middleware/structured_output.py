"""Structured output: the layer that fulfils a `StructuredOutput` feature.

    client = with_structured_output(client)                        # per run:
    response = await client.get_response("...", output_type=Person)
    response = await client.get_response("...", options={"features": [StructuredOutput(Person)]})
    client = with_structured_output(client, Person, max_retries=3)  # or once, at creation

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

from collections.abc import Awaitable, Mapping
from typing import Any

from ..core import (
    Capabilities,
    ChatClient,
    ChatOptions,
    ChatResponse,
    ChatStream,
    DelegatingChatClient,
    MessageInput,
    OptionsInput,
    ResponseStream,
    UserError,
    as_chat_client,
    as_messages,
    check_sendable,
)
from ._feature import StructuredOutput
from ._learned import Learned, Lesson, route_of
from ._run import INFO_KEY, Run
from .strategies import STRATEGIES, Mode

__all__ = ["INFO_KEY", "Lesson", "StructuredOutput", "StructuredOutputChatClient", "with_structured_output"]


class StructuredOutputChatClient(DelegatingChatClient):
    """The layer that turns a `StructuredOutput` feature into a validated, typed response.

    `settings` (name, description, strict, mode, max_retries) apply to runs that give only
    `output_type=`; `default` is the creation-time feature used when a run asks for nothing.
    What runs learn about the backend is on `learned` (and reflected in `capabilities`);
    `reset_learned()` forgets it.
    """

    def __init__(self, inner: ChatClient | Any, default: StructuredOutput[Any] | None = None, **settings: Any) -> None:
        super().__init__(inner)
        if settings:
            StructuredOutput(int, **settings)  # validates the settings now, not at the first call
        self._self_default = default
        self._self_settings = settings
        self._self_learned = Learned()

    @property
    def learned(self) -> Mapping[tuple[str, str | None], Lesson]:
        """What runs learned, per (route, model): the strategies the backend ignored, the one that worked.

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
        for name in sorted(self._self_learned.get(key).ignored):
            capabilities = STRATEGIES[name].turned_off(capabilities)
        return capabilities

    def process(
        self, messages: MessageInput, *, options: OptionsInput, stream: bool, output_type: Any
    ) -> Awaitable[ChatResponse[Any]] | ChatStream:
        """Like any ChatClient; `output_type=T` is a shortcut for a per-run `StructuredOutput(T)`."""
        chat_options = ChatOptions.coerce(options)
        feature = self._feature_for(chat_options, output_type)
        if feature is None:
            return self.__wrapped__.get_response(messages, options=options, stream=stream)  # type: ignore[no-any-return]
        chat_messages = as_messages(messages)  # refused before the first call: it would be paid for
        check_sendable(chat_messages, chat_options)
        run = Run(self.__wrapped__, feature, chat_messages, chat_options, self._self_learned)
        if stream:
            return ResponseStream(run.steps(), run.final_response)
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
    settings: dict[str, Any] = {
        "name": name,
        "description": description,
        "strict": strict,
        "mode": mode,
        "max_retries": max_retries,
    }
    default = None
    if output_type is not None or schema is not None:
        default = StructuredOutput(output_type, schema=schema, **settings)
    return StructuredOutputChatClient(inner, default, **settings)
