"""Amazon Bedrock adapter (Converse and ConverseStream), over boto3's `bedrock-runtime` client.

Needs the extra: `pip install so-middleware[bedrock]`. Credentials and region come from boto3's
standard chain (environment, profile, SSO, instance role); the adapter never reads them.
"""

try:
    import boto3 as _boto3  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised by the import-without-SDK test
    raise ImportError("so_middleware.bedrock needs boto3: pip install 'so-middleware[bedrock]'") from error

from typing import Any

from ...core import ChatClient, register_provider
from ._client import DEFAULT_IDLE_TIMEOUT, BedrockChatClient
from ._profiles import BEDROCK_FORCED_TOOL, BEDROCK_NATIVE, BEDROCK_TOOLS_ONLY, family_of, profile_for

__all__ = [
    "BEDROCK_FORCED_TOOL",
    "BEDROCK_NATIVE",
    "BEDROCK_TOOLS_ONLY",
    "DEFAULT_IDLE_TIMEOUT",
    "BedrockChatClient",
    "adapter_for",
    "family_of",
    "profile_for",
]


def adapter_for(sdk_client: Any, *, model: str | None = None, **options: Any) -> ChatClient:
    """The adapter for a raw boto3 `bedrock-runtime` client.

    Example: `adapter_for(boto3.client("bedrock-runtime"), model="us.anthropic.claude-haiku-4-5-20251001-v1:0")`.
    """
    return BedrockChatClient(sdk_client, model, **options)


# boto3's clients are classes botocore makes at run time, in `botocore.client`: as_chat_client
# finds this provider by that module's top-level name.
register_provider("botocore", adapter_for)
