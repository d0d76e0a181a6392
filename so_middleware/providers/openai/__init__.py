"""OpenAI adapters (Chat Completions; Responses), over the official `openai` SDK.

Needs the extra: `pip install so-middleware[openai]`.
"""

try:
    import openai as _openai  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised by the import-without-SDK test
    raise ImportError("so_middleware.openai needs the openai SDK: pip install 'so-middleware[openai]'") from error

from typing import Any

from ...core import ChatClient, UserError, register_provider
from .._discovery import ServerInfo, reset_discovery
from ._chat import OpenAIChatClient
from ._profiles import (
    GATEWAY_RESPONSES,
    LLAMA_SERVER,
    LLAMA_SERVER_CHAT,
    LLAMA_SERVER_RESPONSES,
    OLLAMA_CHAT,
    OPENAI_API,
    OPENAI_API_RESPONSES,
    OPENAI_COMPATIBLE,
    VLLM_CHAT,
    llama_server_profile,
    profile_for,
    server_profile,
)
from ._responses import OpenAIResponsesClient

__all__ = [
    "GATEWAY_RESPONSES",
    "LLAMA_SERVER",
    "LLAMA_SERVER_CHAT",
    "LLAMA_SERVER_RESPONSES",
    "OPENAI_API",
    "OPENAI_API_RESPONSES",
    "OLLAMA_CHAT",
    "OPENAI_COMPATIBLE",
    "OpenAIChatClient",
    "OpenAIResponsesClient",
    "ServerInfo",
    "VLLM_CHAT",
    "adapter_for",
    "llama_server_profile",
    "profile_for",
    "reset_discovery",
    "server_profile",
]


def adapter_for(sdk_client: Any, *, model: str | None = None, api: str = "chat", **options: Any) -> ChatClient:
    """The adapter for a raw `openai.OpenAI`/`AsyncOpenAI` client: Chat Completions by default,
    `api="responses"` for the Responses API.

    Example: `adapter_for(AsyncOpenAI(), model="gpt-4o-mini", api="responses")`.
    """
    if api == "chat":
        return OpenAIChatClient(sdk_client, model, **options)
    if api == "responses":
        return OpenAIResponsesClient(sdk_client, model, **options)
    raise UserError(f"unknown OpenAI api {api!r}; expected 'chat' or 'responses'")


register_provider("openai", adapter_for)  # as_chat_client wraps raw openai SDK clients with it
