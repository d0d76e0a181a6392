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

from collections.abc import Awaitable
from typing import Any, Generic, TypeVar

from ..core import (
    ChatClient,
    ChatOptions,
    ChatResponse,
    ChatStream,
    DelegatingChatClient,
    Feature,
    MessageInput,
    OptionsInput,
    ResponseStream,
    UserError,
    as_chat_client,
    as_messages,
)
from ..schema import OutputSchema
from ._run import INFO_KEY, Run
from ._strategies import MODES, Mode

__all__ = ["INFO_KEY", "StructuredOutput", "StructuredOutputChatClient", "with_structured_output"]

T = TypeVar("T")


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

    def __init__(self, inner: ChatClient | Any, default: StructuredOutput[Any] | None = None, **settings: Any) -> None:
        super().__init__(inner)
        if settings:
            StructuredOutput(str, **settings)  # validates the settings now, not at the first call
        self._self_default = default
        self._self_settings = settings

    def process(
        self, messages: MessageInput, *, options: OptionsInput, stream: bool, output_type: Any
    ) -> Awaitable[ChatResponse[Any]] | ChatStream:
        """Like any ChatClient; `output_type=T` is a shortcut for a per-run `StructuredOutput(T)`."""
        chat_options = ChatOptions.coerce(options)
        feature = self._feature_for(chat_options, output_type)
        if feature is None:
            return self.__wrapped__.get_response(messages, options=options, stream=stream)  # type: ignore[no-any-return]
        others = [f for f in chat_options.features if f is not feature]
        run = Run(self.__wrapped__, feature, as_messages(messages), chat_options.with_features(others))
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
