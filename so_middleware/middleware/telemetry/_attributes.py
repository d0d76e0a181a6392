"""Semantic-convention attributes of a call: built from the request, the response or the error.

Pure mapping from so_middleware's types to attribute dicts; `None` values are left for the caller
to drop. Nothing here starts or ends a span.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ...core import (
    RETRIES_KEY,
    STRUCTURED_OUTPUT_KEY,
    ChatOptions,
    ChatResponse,
    ContentFilterError,
    IncompleteOutputError,
    OutputError,
    RefusalError,
)
from . import _names as names

__all__ = ["request_attributes", "response_attributes", "structured_attributes", "structured_info"]

_OUTCOMES = {RefusalError: "refusal", IncompleteOutputError: "incomplete", ContentFilterError: "content_filter"}


def provider_name(client: Any) -> str:
    """`gen_ai.provider.name` of a client: its `provider_name`, else "unknown"."""
    return str(getattr(client, "provider_name", None) or "unknown")


def request_attributes(client: Any, chat_options: ChatOptions, stream: bool, output_type: Any) -> dict[str, Any]:
    """The attributes known before the call: operation, provider, request parameters, server
    (those with a value)."""
    response_format = chat_options.response_format
    structured = output_type is not None or (response_format is not None and response_format.type != "text")
    if not structured:  # a loop, not any(...): no generator on every call
        for feature in chat_options.features:
            if hasattr(feature, "output_type"):
                structured = True
                break
    attributes = {
        names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT,
        names.GEN_AI_PROVIDER_NAME: provider_name(client),
        names.GEN_AI_REQUEST_MODEL: chat_options.model or getattr(client, "model", None),
        names.GEN_AI_REQUEST_TEMPERATURE: chat_options.temperature,
        names.GEN_AI_REQUEST_MAX_TOKENS: chat_options.max_tokens,
        names.GEN_AI_REQUEST_TOP_P: chat_options.top_p,
        names.GEN_AI_REQUEST_SEED: chat_options.seed,
        names.GEN_AI_REQUEST_STOP_SEQUENCES: list(chat_options.stop) if chat_options.stop else None,
        names.GEN_AI_REQUEST_STREAM: stream,
        names.GEN_AI_OUTPUT_TYPE: "json" if structured else "text",
        names.GEN_AI_CONVERSATION_ID: _conversation_id((chat_options.extra_body or {}).get("conversation")),
    }
    base_url = getattr(client, "base_url", None)
    if isinstance(base_url, str) and base_url:
        attributes[names.SERVER_ADDRESS], attributes[names.SERVER_PORT] = _server(base_url)
    return {key: value for key, value in attributes.items() if value is not None}  # kept for the call's length


@functools.lru_cache(maxsize=64)
def _server(base_url: str) -> tuple[str | None, int | None]:
    """(host, port) of a base URL, parsed once per URL."""
    parts = urlsplit(base_url)
    return parts.hostname, parts.port or {"https": 443, "http": 80}.get(parts.scheme)


def response_attributes(response: ChatResponse[Any]) -> dict[str, Any]:
    """The attributes a response sets: id, model, finish reasons, usage, retries, structured output."""
    values: dict[str, Any] = {
        names.GEN_AI_RESPONSE_MODEL: response.model_id,
        names.GEN_AI_RESPONSE_ID: response.response_id,
        names.GEN_AI_RESPONSE_FINISH_REASONS: [str(response.finish_reason)] if response.finish_reason else None,
        names.SO_RETRY_COUNT: len(response.additional_properties.get(RETRIES_KEY) or []) or None,
    }
    raw = response.raw_representation
    if not isinstance(raw, list):  # a stream's raw representation is its events
        values[names.GEN_AI_CONVERSATION_ID] = _conversation_id(getattr(raw, "conversation", None))
    usage = response.usage
    if usage is not None:
        values[names.GEN_AI_USAGE_INPUT_TOKENS] = usage.input_tokens
        values[names.GEN_AI_USAGE_OUTPUT_TOKENS] = usage.output_tokens
        values[names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = usage.cached_input_tokens
        values[names.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = usage.cache_creation_input_tokens
        values[names.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = usage.reasoning_tokens
    values.update(structured_attributes(response.additional_properties.get(STRUCTURED_OUTPUT_KEY)))
    return values


def structured_info(error: OutputError) -> dict[str, Any]:
    """The structured-output run an `OutputError` ended: schema, strategy, attempts, outcome."""
    response_info = getattr(error.response, "additional_properties", {}).get(STRUCTURED_OUTPUT_KEY)
    info = dict(response_info) if isinstance(response_info, dict) else {}
    strategies = [attempt.strategy for attempt in error.attempts if attempt.strategy]
    info.setdefault("attempts", len(error.attempts) or None)
    info.setdefault("strategy", strategies[-1] if strategies else None)
    info.setdefault("outcome", next((o for kind, o in _OUTCOMES.items() if isinstance(error, kind)), "invalid"))
    return info


def structured_attributes(info: Any) -> dict[str, Any]:
    """`so_middleware.structured_output.*` from a run's info dict (valid str/int values only)."""
    if not isinstance(info, dict):
        return {}
    values = {
        names.SO_SCHEMA_NAME: info.get("name"),
        names.SO_STRATEGY: info.get("strategy"),
        names.SO_ATTEMPTS: info.get("attempts"),
        names.SO_OUTCOME: info.get("outcome"),
    }
    return {
        key: value for key, value in values.items() if isinstance(value, (str, int)) and not isinstance(value, bool)
    }


def _conversation_id(conversation: Any) -> str | None:
    """The id of a Responses API conversation: given as a string, `{"id": ...}` or an object with `.id`."""
    if isinstance(conversation, str):
        return conversation or None
    found = conversation.get("id") if isinstance(conversation, Mapping) else getattr(conversation, "id", None)
    return found if isinstance(found, str) and found else None
