"""Gemini adapter (`generateContent`), over the official `google-genai` SDK.

Needs the extra: `pip install so-middleware[google]`. One `genai.Client` reaches the Gemini
Developer API (`genai.Client(api_key=...)`) or Vertex AI (`genai.Client(vertexai=True, ...)`).
"""

try:
    from google import genai as _genai  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised by the import-without-SDK test
    raise ImportError("so_middleware.google needs the google-genai SDK: pip install 'so-middleware[google]'") from error

from typing import Any

from ...core import ChatClient, register_provider
from ._client import DEFAULT_IDLE_TIMEOUT, GeminiChatClient
from ._profiles import GEMINI_API, GEMINI_API_OPENAPI_SCHEMA, profile_for

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "GEMINI_API",
    "GEMINI_API_OPENAPI_SCHEMA",
    "GeminiChatClient",
    "adapter_for",
    "profile_for",
]


def adapter_for(sdk_client: Any, *, model: str | None = None, **options: Any) -> ChatClient:
    """The adapter for a raw `google.genai.Client`.

    Example: `adapter_for(genai.Client(), model="gemini-2.5-flash")`.
    """
    return GeminiChatClient(sdk_client, model, **options)


register_provider("google", adapter_for)  # as_chat_client wraps raw google-genai clients with it
