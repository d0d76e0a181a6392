"""What the telemetry layer records: GenAI semantic-convention names and our own.

Names are plain strings so nothing needs `opentelemetry-semantic-conventions` (whose `_incubating`
names move between releases). Spec: https://opentelemetry.io/docs/specs/semconv/gen-ai/
"""

from __future__ import annotations

from typing import Final

# ---------------------------------------------------------------- spans and operations

OPERATION_CHAT: Final = "chat"
OPERATION_INVOKE_AGENT: Final = "invoke_agent"

GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_OUTPUT_TYPE: Final = "gen_ai.output.type"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"

# ---------------------------------------------------------------- request

GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
GEN_AI_REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_TOP_P: Final = "gen_ai.request.top_p"
GEN_AI_REQUEST_SEED: Final = "gen_ai.request.seed"
GEN_AI_REQUEST_STOP_SEQUENCES: Final = "gen_ai.request.stop_sequences"
GEN_AI_REQUEST_STREAM: Final = "gen_ai.request.stream"

# ---------------------------------------------------------------- response

GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"

# ---------------------------------------------------------------- content (opt-in only)

GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
CONTENT_ATTRIBUTES: Final = (GEN_AI_INPUT_MESSAGES, GEN_AI_OUTPUT_MESSAGES, GEN_AI_SYSTEM_INSTRUCTIONS)
CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
EMIT_EVENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT"
SEMCONV_OPT_IN_ENV: Final = "OTEL_SEMCONV_STABILITY_OPT_IN"
GEN_AI_LATEST_EXPERIMENTAL: Final = "gen_ai_latest_experimental"  # the opt-in that makes the env an enum
CONTENT_MODES: Final = ("NO_CONTENT", "SPAN_ONLY", "EVENT_ONLY", "SPAN_AND_EVENT")
EVENT_INFERENCE_DETAILS: Final = "gen_ai.client.inference.operation.details"  # log event with content

# ---------------------------------------------------------------- general

ERROR_TYPE: Final = "error.type"
SERVER_ADDRESS: Final = "server.address"
HTTP_RESPONSE_STATUS_CODE: Final = "http.response.status_code"
SERVER_PORT: Final = "server.port"

# ---------------------------------------------------------------- metrics

METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
METRIC_TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.operation.time_to_first_chunk"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
TOKEN_TYPE_INPUT: Final = "input"
TOKEN_TYPE_OUTPUT: Final = "output"

# Bucket boundaries recommended by the GenAI metrics conventions.
DURATION_BUCKETS: Final = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS: Final = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)

# Attributes copied from the span onto metric points (low cardinality only).
METRIC_ATTRIBUTES: Final = (
    GEN_AI_OPERATION_NAME,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_MODEL,
    SERVER_ADDRESS,
    SERVER_PORT,
    ERROR_TYPE,
)

# ---------------------------------------------------------------- so_middleware's own

SO_SCHEMA_NAME: Final = "so_middleware.structured_output.schema_name"
SO_STRATEGY: Final = "so_middleware.structured_output.strategy"
SO_ATTEMPTS: Final = "so_middleware.structured_output.attempts"
SO_OUTCOME: Final = "so_middleware.structured_output.outcome"
SO_RETRY_COUNT: Final = "so_middleware.retry.count"
SO_CALL_END: Final = "so_middleware.call.end"  # complete | error | closed | cancelled
