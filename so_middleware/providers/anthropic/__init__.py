"""Anthropic adapter (Messages API), over the official `anthropic` SDK.

Needs the extra: `pip install so-middleware[anthropic]`.
"""

try:
    import anthropic as _anthropic  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised by the import-without-SDK test
    raise ImportError(
        "so_middleware.anthropic needs the anthropic SDK: pip install 'so-middleware[anthropic]'"
    ) from error

from typing import Any

from ...core import ChatClient, register_provider
from .._discovery import ServerInfo, reset_discovery
from ._messages import DEFAULT_MAX_TOKENS, AnthropicChatClient
from ._profiles import (
    ANTHROPIC_API,
    ANTHROPIC_COMPATIBLE,
    LLAMA_SERVER_MESSAGES,
    OLLAMA_MESSAGES,
    VLLM_MESSAGES,
    profile_for,
    rejects_prefill,
    server_profile,
)

__all__ = [
    "ANTHROPIC_API",
    "ANTHROPIC_COMPATIBLE",
    "DEFAULT_MAX_TOKENS",
    "LLAMA_SERVER_MESSAGES",
    "OLLAMA_MESSAGES",
    "VLLM_MESSAGES",
    "AnthropicChatClient",
    "adapter_for",
    "ServerInfo",
    "profile_for",
    "rejects_prefill",
    "reset_discovery",
    "server_profile",
]


def adapter_for(sdk_client: Any, *, model: str | None = None, **options: Any) -> ChatClient:
    """The adapter for a raw `anthropic.Anthropic`/`AsyncAnthropic` client (Messages API).

    Example: `adapter_for(AsyncAnthropic(), model="claude-haiku-4-5", max_tokens=2048)`.
    """
    return AnthropicChatClient(sdk_client, model, **options)


register_provider("anthropic", adapter_for)  # as_chat_client wraps raw anthropic SDK clients with it
