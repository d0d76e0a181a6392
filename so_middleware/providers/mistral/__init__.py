"""Mistral adapter (`/v1/chat/completions`), over the official `mistralai` SDK.

Needs the extra: `pip install so-middleware[mistral]`. The SDK's client is
`from mistralai.client import Mistral` (mistralai 3; `from mistralai import Mistral` no longer works).
"""

try:
    from mistralai.client import Mistral as _Mistral  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised by the import-without-SDK test
    raise ImportError("so_middleware.mistral needs the mistralai SDK: pip install 'so-middleware[mistral]'") from error

from typing import Any

from ...core import ChatClient, register_provider
from ._client import DEFAULT_IDLE_TIMEOUT, MistralChatClient
from ._profiles import MISTRAL_API, profile_for

__all__ = ["DEFAULT_IDLE_TIMEOUT", "MISTRAL_API", "MistralChatClient", "adapter_for", "profile_for"]


def adapter_for(sdk_client: Any, *, model: str | None = None, **options: Any) -> ChatClient:
    """The adapter for a raw `mistralai.client.Mistral`.

    Example: `adapter_for(Mistral(api_key=...), model="mistral-small-latest")`.
    """
    return MistralChatClient(sdk_client, model, **options)


register_provider("mistralai", adapter_for)  # as_chat_client wraps raw mistralai clients with it
