"""OpenAI adapters (Chat Completions; Responses), over the official `openai` SDK.

Needs the extra: `pip install so-middleware[openai]`.
"""

try:
    import openai as _openai  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised by the import-without-SDK test
    raise ImportError("so_middleware.openai needs the openai SDK: pip install 'so-middleware[openai]'") from error

from typing import Any

from ...core import ChatClient, UserError, register_provider
from ._chat import OpenAIChatClient
from ._profiles import (
    LLAMA_SERVER,
    LLAMA_SERVER_CHAT,
    LLAMA_SERVER_RESPONSES,
    OPENAI_API,
    OPENAI_COMPATIBLE,
    llama_server_profile,
    profile_for,
)
from ._responses import OpenAIResponsesClient

__all__ = [
    "LLAMA_SERVER",
    "LLAMA_SERVER_CHAT",
    "LLAMA_SERVER_RESPONSES",
    "OPENAI_API",
    "OPENAI_COMPATIBLE",
    "OpenAIChatClient",
    "OpenAIResponsesClient",
    "adapter_for",
    "llama_server_profile",
    "profile_for",
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
