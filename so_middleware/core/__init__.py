"""The core: the types, the client protocol and the layer base every other layer builds on.

It imports nothing above it (no schema, provider, middleware or agent module) and no SDK. The
other layers import from `so_middleware.core`; its module files are private.
"""

from ._attempts import Attempt
from ._background import with_continuation
from ._capabilities import Capabilities, SchemaProfile
from ._carry import carry
from ._client import (
    BaseChatClient,
    ChatClient,
    ChatStream,
    ClientInput,
    SyncChatStream,
    TypedChatStream,
    TypedSyncChatStream,
    as_chat_client,
    streams_fresh_updates,
)
from ._contents import (
    Content,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    ReasoningContent,
    RefusalContent,
    TextContent,
)
from ._continuation import ContinuationToken
from ._deadline import call_deadline, seconds_left
from ._default_typed import DefaultTyped
from ._delegating import DelegatingChatClient, LayerCall, chain
from ._exceptions import (
    MAX_RAW_TEXT,
    TRANSIENT_ERROR_CODES,
    ContentFilterError,
    DeadlineExceededError,
    IncompleteOutputError,
    LocalServerError,
    ModelBehaviorError,
    OutputError,
    ProviderResponseError,
    RefusalError,
    SOMiddlewareError,
    StreamConsumedError,
    StreamInterruptedError,
    UserError,
)
from ._failures import (
    FailureKind,
    ProviderConnectionError,
    ProviderStatusError,
    ProviderTimeoutError,
    TransportError,
    TransportFailure,
    failure_of,
    is_transient,
)
from ._features import Feature
from ._formats import ResponseFormat
from ._formats import copy_json as copy_json  # for schema and middleware: JSON values copied without deepcopy
from ._formats import flat_format as flat_format  # for wire: either OpenAI spelling of a format read flat
from ._messages import ChatMessage, MessageInput, Role, as_messages
from ._options import FEATURES_KEY, ChatOptions, ForcedTool, FunctionTool, OptionsInput, ToolChoice, find_feature
from ._protocol import show_parameters_of as show_parameters_of  # for agents: the twin's run-time signature
from ._protocol import typed_as as typed_as  # for agents: a blocking twin typed from its async verb
from ._record_keys import (
    CACHE_HIT_KEY,
    FALLBACK_KEY,
    RECORD_KEYS,
    RESUMED_KEY,
    RETRIES_KEY,
    RETRY_EVENT,
    STRUCTURED_OUTPUT_KEY,
)
from ._redaction import MASK, SECRET_NAME_PARTS, SHORT_SECRET_NAMES, is_secret_name, redact, redact_url
from ._registry import ENTRY_POINT_GROUP, AdapterFactory, register_provider
from ._responses import ChatResponse, ChatResponseUpdate
from ._retry_after import retry_after_seconds
from ._sendable import check_sendable, lone_surrogate_in, mend_surrogates
from ._spans import AgentSpans
from ._stream import ResponseStream
from ._surrogates import describe_surrogate, lone_surrogate_at, mend_text
from ._sync import SyncResponseStream, run_interruptibly, run_sync, sync_stream, warn_at_callers_line
from ._text_reading import TextReader, install_text_reader
from ._usage import FinishReason, UsageDetails
from ._waiting import cancel_run, wait_for_response

__all__ = [
    "CACHE_HIT_KEY",
    "FALLBACK_KEY",
    "RECORD_KEYS",
    "RESUMED_KEY",
    "RETRIES_KEY",
    "RETRY_EVENT",
    "SECRET_NAME_PARTS",
    "SHORT_SECRET_NAMES",
    "STRUCTURED_OUTPUT_KEY",
    "MASK",
    "MAX_RAW_TEXT",
    "TRANSIENT_ERROR_CODES",
    "ENTRY_POINT_GROUP",
    "FEATURES_KEY",
    "AdapterFactory",
    "AgentSpans",
    "Attempt",
    "BaseChatClient",
    "Capabilities",
    "ChatClient",
    "ChatMessage",
    "ChatOptions",
    "ChatResponse",
    "ChatResponseUpdate",
    "ChatStream",
    "ClientInput",
    "Content",
    "ContentFilterError",
    "ContinuationToken",
    "DeadlineExceededError",
    "DefaultTyped",
    "DataContent",
    "DelegatingChatClient",
    "FailureKind",
    "Feature",
    "FinishReason",
    "ForcedTool",
    "FunctionCallContent",
    "FunctionResultContent",
    "FunctionTool",
    "LayerCall",
    "HostedFileContent",
    "IncompleteOutputError",
    "LocalServerError",
    "MessageInput",
    "ModelBehaviorError",
    "OptionsInput",
    "OutputError",
    "ProviderConnectionError",
    "ProviderResponseError",
    "ProviderStatusError",
    "ProviderTimeoutError",
    "ReasoningContent",
    "RefusalContent",
    "RefusalError",
    "ResponseFormat",
    "ResponseStream",
    "Role",
    "SOMiddlewareError",
    "SchemaProfile",
    "StreamConsumedError",
    "StreamInterruptedError",
    "SyncChatStream",
    "SyncResponseStream",
    "TextContent",
    "TextReader",
    "TransportError",
    "TransportFailure",
    "ToolChoice",
    "TypedChatStream",
    "TypedSyncChatStream",
    "UsageDetails",
    "UserError",
    "as_chat_client",
    "as_messages",
    "call_deadline",
    "carry",
    "cancel_run",
    "chain",
    "check_sendable",
    "describe_surrogate",
    "failure_of",
    "find_feature",
    "install_text_reader",
    "is_secret_name",
    "is_transient",
    "lone_surrogate_at",
    "lone_surrogate_in",
    "mend_surrogates",
    "mend_text",
    "register_provider",
    "redact",
    "redact_url",
    "retry_after_seconds",
    "run_interruptibly",
    "run_sync",
    "seconds_left",
    "streams_fresh_updates",
    "sync_stream",
    "warn_at_callers_line",
    "wait_for_response",
    "with_continuation",
]
