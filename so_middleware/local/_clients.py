"""Chat clients on the embedded local server, one per route, with that route's capability profile.

| route         | SDK client                               | adapter                 | profile                  |
|---------------|------------------------------------------|-------------------------|--------------------------|
| `"chat"`      | `openai.(Async)OpenAI(base_url=.../v1)`   | `OpenAIChatClient`      | `LLAMA_SERVER_CHAT`      |
| `"responses"` | `openai.(Async)OpenAI(base_url=.../v1)`   | `OpenAIResponsesClient` | `LLAMA_SERVER_RESPONSES` |
| `"anthropic"` | `anthropic.(Async)Anthropic(base_url=...)` | `AnthropicChatClient`   | `LLAMA_SERVER_MESSAGES`  |

The adapter is wrapped in `ContextSizeChatClient`, so a request larger than the server's context
per request raises `ContextSizeError` naming both sizes. The SDKs are imported when a client is
made, so `import so_middleware.local` needs neither.
"""

from __future__ import annotations

from typing import Any, Literal

from ..core import Capabilities, UserError
from ._context import ContextSizeChatClient
from ._server import LocalModelServer

__all__ = ["ROUTES", "Route", "chat_client"]

Route = Literal["chat", "responses", "anthropic"]
ROUTES: tuple[Route, ...] = ("chat", "responses", "anthropic")


def chat_client(
    server: LocalModelServer, route: Route = "chat", *, sync: bool = False, **sdk_options: Any
) -> ContextSizeChatClient:
    """A chat client on `server` through the official SDK of `route`, with the llama-server profile.

    The SDK client is async unless `sync=True`; `sdk_options` go to its constructor (for example
    `max_retries=0` or `http_client=...`). The adapter's `sdk_client` can be closed when done.

    Example:
        with LocalModelServer() as server:
            client = chat_client(server, "anthropic")
            response = client.get_response_sync("Say hello.")
    """
    sdk_options.setdefault("api_key", "local")
    advice = f" (context_size={server.context_size} shared by parallel={server.parallel} slots)"
    return ContextSizeChatClient(_adapter(server, route, sync, sdk_options), advice)


def _adapter(server: LocalModelServer, route: Route, sync: bool, sdk_options: dict[str, Any]) -> Any:
    if route in ("chat", "responses"):
        import openai

        from ..providers.openai import (
            LLAMA_SERVER_CHAT,
            LLAMA_SERVER_RESPONSES,
            OpenAIChatClient,
            OpenAIResponsesClient,
        )

        sdk: Any = (openai.OpenAI if sync else openai.AsyncOpenAI)(base_url=server.base_url, **sdk_options)
        if route == "chat":
            return OpenAIChatClient(sdk, server.model, capabilities=_bounded(LLAMA_SERVER_CHAT, server))
        return OpenAIResponsesClient(sdk, server.model, capabilities=_bounded(LLAMA_SERVER_RESPONSES, server))
    if route == "anthropic":
        import anthropic

        from ..providers.anthropic import LLAMA_SERVER_MESSAGES, AnthropicChatClient

        sdk = (anthropic.Anthropic if sync else anthropic.AsyncAnthropic)(base_url=server.root_url, **sdk_options)
        return AnthropicChatClient(sdk, server.model, capabilities=_bounded(LLAMA_SERVER_MESSAGES, server))
    raise UserError(f"unknown route {route!r}; expected one of {', '.join(ROUTES)}")


def _bounded(profile: Capabilities, server: LocalModelServer) -> Capabilities:
    """The route's profile with the server's own answer bound: on the Responses route llama-server
    reports an answer cut there as `completed`, and only its usage shows the cut."""
    return profile.replace(default_max_tokens=server.max_tokens)
