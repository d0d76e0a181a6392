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

from ._client import BaseChatClient, Capabilities, ChatClient, ChatStream, Feature, as_chat_client
from ._delegating import DelegatingChatClient, chain
from ._exceptions import (
    ContentFilterError,
    IncompleteOutputError,
    LocalServerError,
    ModelBehaviorError,
    OutputError,
    RefusalError,
    SOMiddlewareError,
    StreamConsumedError,
    StreamInterruptedError,
    UserError,
)
from ._formats import ResponseFormat, chat_format_to_responses, responses_format_to_chat
from ._options import ChatOptions, ForcedTool, FunctionTool, ToolChoice, find_feature
from ._stream import ResponseStream
from ._sync import run_sync
from ._types import (
    Attempt,
    ChatMessage,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    DataContent,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    RefusalContent,
    TextContent,
    UsageDetails,
    as_messages,
)
from .agents import (
    AgentResponse,
    AgentResponseUpdate,
    AgentThread,
    ChatAgent,
    DelegatingAgent,
    SecondaryOutput,
    StructuredOutputAgent,
)
from .middleware.limits import LimitsChatClient, LimitStats, with_limits
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
    "Capabilities",
    "ChatAgent",
    "ChatClient",
    "ChatMessage",
    "ChatOptions",
    "ChatResponse",
    "ChatResponseUpdate",
    "ChatStream",
    "Content",
    "ContentFilterError",
    "DataContent",
    "DelegatingAgent",
    "DelegatingChatClient",
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
    "ModelBehaviorError",
    "OutputError",
    "OutputSchema",
    "ReasoningContent",
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
    "chain",
    "chat_format_to_responses",
    "find_feature",
    "responses_format_to_chat",
    "run_sync",
    "with_limits",
    "with_retries",
    "with_structured_output",
    "with_telemetry",
]

__version__ = "0.1.0"
