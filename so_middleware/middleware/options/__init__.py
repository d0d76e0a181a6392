"""Default options: values every call gets unless it sets its own, and a `configure` callback.

    client = with_options(OpenAIChatClient(AsyncOpenAI()), model="gpt-4o-mini", temperature=0, max_tokens=500)
    await client.get_response("Hi", options={"temperature": 0.7})  # temperature 0.7, the rest from the defaults

**Defaults** are option keys, as in `options={...}` (unknown keys raise `UserError` when the layer is
built). A value the call sets wins; one it leaves unset (or `None`) comes from the defaults. Default
`features` come after the call's own; `additional_properties` are merged, the call's keys winning.

**`configure`** (Microsoft.Extensions.AI's `ConfigureOptionsChatClient`) gets each call's options
after the defaults are applied, as a new `ChatOptions`, and returns the options to send:
`configure=lambda options: options.replace(max_tokens=min(options.max_tokens or 1000, 1000))`.

**Never mutated:** the caller's dict or `ChatOptions` is not changed and the features below are the
caller's very objects. A default feature is one object shared by every call: prefer
`with_structured_output(client, Person)` over a default `StructuredOutput` (which records each
run's response on itself).

**Both paths** alike: streaming only passes the stream through.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ...core import (
    ChatClient,
    ChatOptions,
    ChatResponse,
    ChatStream,
    DelegatingChatClient,
    LayerCall,
    OptionsInput,
    UserError,
)

__all__ = ["ConfigureOptionsChatClient", "with_options"]

Configure = Callable[[ChatOptions], "ChatOptions | Mapping[str, Any]"]


class ConfigureOptionsChatClient(DelegatingChatClient):
    """Applies default options, then an optional `configure` callback, to every call.

    Example:
        client = ConfigureOptionsChatClient(adapter, defaults={"temperature": 0, "max_tokens": 200})
        await client.get_response("Hi")  # sent with temperature 0 and max_tokens 200
    """

    def __init__(
        self, inner: ChatClient | Any, *, defaults: OptionsInput = None, configure: Configure | None = None
    ) -> None:
        if configure is not None and not callable(configure):
            raise UserError(f"configure must be a function of the options, not {type(configure).__name__}")
        default_options = ChatOptions.coerce(defaults)  # unknown keys fail here, not at the first call
        super().__init__(inner)
        self._self_defaults = default_options
        self._self_configure = configure

    def respond(self, call: LayerCall) -> Awaitable[ChatResponse[Any]]:
        """Call the inner client with the defaults (and `configure`) applied to a copy of the options."""
        return super().respond(call.replace(options=self.options_for(call.options)))

    def stream(self, call: LayerCall) -> ChatStream:
        """The same, streamed."""
        return super().stream(call.replace(options=self.options_for(call.options)))

    def options_for(self, options: OptionsInput) -> ChatOptions:
        """The options a call with `options` sends: a new object, the caller's left as it was.

        Example:
            with_options(client, temperature=0).options_for({"seed": 1})  # ChatOptions(temperature=0, seed=1)
        """
        merged = ChatOptions.coerce(options).merged_over(self._self_defaults)
        configure = self._self_configure
        if configure is None:
            return merged
        configured = configure(merged)
        if not isinstance(configured, (ChatOptions, Mapping)):
            raise UserError(f"configure must return the options (a ChatOptions or a dict), not {configured!r:.100}")
        return ChatOptions.coerce(configured)


def with_options(
    client: ChatClient | Any, *, configure: Configure | None = None, **defaults: Any
) -> ConfigureOptionsChatClient:
    """Wrap `client` so every call gets `defaults` (the call's own values win), then `configure`.

    Example:
        client = with_options(adapter, model="gpt-4o-mini", temperature=0)
        client = with_options(adapter, configure=lambda options: options.replace(seed=42))
    """
    return ConfigureOptionsChatClient(client, defaults=defaults, configure=configure)
