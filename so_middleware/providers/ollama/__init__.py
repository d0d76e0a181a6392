"""Ollama adapter (native `/api/chat`), over the official `ollama` SDK.

Needs the extra: `pip install so-middleware[ollama]`.
"""

try:
    import ollama as _ollama  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised by the import-without-SDK test
    raise ImportError("so_middleware.ollama needs the ollama SDK: pip install 'so-middleware[ollama]'") from error

from typing import Any

from ...core import ChatClient, register_provider
from ._client import DEFAULT_IDLE_TIMEOUT, OllamaChatClient
from ._profiles import OLLAMA_NATIVE

__all__ = ["DEFAULT_IDLE_TIMEOUT", "OLLAMA_NATIVE", "OllamaChatClient", "adapter_for"]


def adapter_for(sdk_client: Any, *, model: str | None = None, **options: Any) -> ChatClient:
    """The adapter for a raw `ollama.AsyncClient`.

    Example: `adapter_for(ollama.AsyncClient(), model="llama3.2", keep_alive="10m")`.
    """
    return OllamaChatClient(sdk_client, model, **options)


register_provider("ollama", adapter_for)  # as_chat_client wraps raw ollama SDK clients with it
