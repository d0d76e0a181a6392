"""so_middleware: typed, validated structured output from any chat model, as middleware.

Example:
    from openai import AsyncOpenAI
    from so_middleware import with_structured_output

    client = with_structured_output(AsyncOpenAI(), model="gpt-4o-mini")
    response = await client.get_response("Ada Lovelace, 36", output_type=Person)
    response.value  # Person(name='Ada Lovelace', age=36)

`import so_middleware` needs neither SDK; adapters live in `so_middleware.openai` and
`so_middleware.anthropic`.
"""

from .agents import (
    AgentResponse,
    AgentResponseUpdate,
    AgentThread,
    ChatAgent,
    DelegatingAgent,
    SecondaryOutput,
    StructuredOutputAgent,
)
from .core import (
    Attempt,
    BaseChatClient,
    Capabilities,
    ChatClient,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ChatStream,
    Content,
    ContentFilterError,
    ContinuationToken,
    DataContent,
    DeadlineExceededError,
    DelegatingChatClient,
    Feature,
    FinishReason,
    ForcedTool,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    HostedFileContent,
    IncompleteOutputError,
    LocalServerError,
    ModelBehaviorError,
    OutputError,
    ProviderResponseError,
    ReasoningContent,
    RefusalContent,
    RefusalError,
    ResponseFormat,
    ResponseStream,
    SOMiddlewareError,
    StreamConsumedError,
    StreamInterruptedError,
    TextContent,
    ToolChoice,
    UsageDetails,
    UserError,
    as_chat_client,
    as_messages,
    cancel_run,
    chain,
    chat_format_to_responses,
    find_feature,
    responses_format_to_chat,
    run_sync,
    wait_for_response,
)
from .middleware.cache import CachingChatClient, MemoryStore, disk_store, request_key, with_cache
from .middleware.fallback import FallbackChatClient, with_fallback
from .middleware.limits import LimitsChatClient, LimitStats, with_limits
from .middleware.logging import LoggingChatClient, with_logging
from .middleware.options import ConfigureOptionsChatClient, with_options
from .middleware.retries import RetryingChatClient, with_retries
from .middleware.structured_output import StructuredOutput, StructuredOutputChatClient, with_structured_output
from .middleware.telemetry import TelemetryChatClient, with_telemetry
from .schema import OutputSchema

__all__ = [
    "AgentResponse",
    "AgentResponseUpdate",
    "AgentThread",
    "Attempt",
    "BaseChatClient",
    "CachingChatClient",
    "Capabilities",
    "ChatAgent",
    "ChatClient",
    "ChatMessage",
    "ChatOptions",
    "ChatResponse",
    "ChatResponseUpdate",
    "ChatStream",
    "ConfigureOptionsChatClient",
    "Content",
    "ContentFilterError",
    "ContinuationToken",
    "DataContent",
    "DeadlineExceededError",
    "DelegatingAgent",
    "DelegatingChatClient",
    "FallbackChatClient",
    "Feature",
    "FinishReason",
    "ForcedTool",
    "FunctionCallContent",
    "FunctionResultContent",
    "FunctionTool",
    "IncompleteOutputError",
    "LimitStats",
    "LimitsChatClient",
    "LocalServerError",
    "LoggingChatClient",
    "MemoryStore",
    "ModelBehaviorError",
    "OutputError",
    "OutputSchema",
    "ProviderResponseError",
    "ReasoningContent",
    "HostedFileContent",
    "RefusalContent",
    "RefusalError",
    "ResponseFormat",
    "ResponseStream",
    "RetryingChatClient",
    "SOMiddlewareError",
    "SecondaryOutput",
    "StreamConsumedError",
    "StreamInterruptedError",
    "StructuredOutput",
    "StructuredOutputAgent",
    "StructuredOutputChatClient",
    "TelemetryChatClient",
    "TextContent",
    "ToolChoice",
    "UsageDetails",
    "UserError",
    "as_chat_client",
    "as_messages",
    "cancel_run",
    "chain",
    "chat_format_to_responses",
    "disk_store",
    "find_feature",
    "request_key",
    "responses_format_to_chat",
    "run_sync",
    "wait_for_response",
    "with_cache",
    "with_fallback",
    "with_limits",
    "with_logging",
    "with_options",
    "with_retries",
    "with_structured_output",
    "with_telemetry",
]

__version__ = "0.1.0"
