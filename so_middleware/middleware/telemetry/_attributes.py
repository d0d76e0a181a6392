"""Semantic-convention attributes of a call: built from the request, the response or the error.

Pure mapping from so_middleware's types to attribute dicts (only the values that are set). Nothing
here starts or ends a span.
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
    DelegatingChatClient,
    FinishReason,
    IncompleteOutputError,
    OutputError,
    RefusalError,
)
from . import _names as names

__all__ = ["ClientReads", "request_attributes", "response_attributes", "structured_attributes", "structured_info"]

_FINISH_VALUES: dict[Any, str] = {reason: reason.value for reason in FinishReason}
_OUTCOMES = {RefusalError: "refusal", IncompleteOutputError: "incomplete", ContentFilterError: "content_filter"}


class ClientReads:
    """Where a layer reads its client's `provider_name`, `model` and `base_url` on every call: the
    client that answers each, found once. A layer whose class lacks an attribute passes its read on
    to the client it wraps, through a failed lookup (wrapt raises and catches an AttributeError),
    which costs microseconds a layer; read from where it is answered, it costs none. Read each call,
    not kept: `client.get_service(OpenAIChatClient).model = "x"` shows in the next call's span."""

    __slots__ = ("base_url", "model", "provider")

    def __init__(self, client: Any) -> None:
        self.provider = _answering(client, "provider_name")
        self.model = _answering(client, "model")
        self.base_url = _answering(client, "base_url")

    def provider_name(self) -> str:
        """`gen_ai.provider.name` of the client: its `provider_name`, else "unknown"."""
        return str(getattr(self.provider, "provider_name", None) or "unknown")


def _answering(client: Any, name: str) -> Any:
    """The client that answers `client.<name>`: from `client` inwards, the first that is not a
    layer or whose layer class has the attribute (a layer holds no other state of its own)."""
    # type(), not isinstance(): isinstance sees through a layer to the client it wraps
    while issubclass(type(client), DelegatingChatClient) and not hasattr(type(client), name):
        client = client.__wrapped__
    return client


def request_attributes(
    client: ClientReads, chat_options: ChatOptions, stream: bool, output_type: Any
) -> dict[str, Any]:
    """The attributes known before the call: operation, provider, request parameters, server
    (those with a value)."""
    response_format = chat_options.response_format
    structured = output_type is not None or (response_format is not None and response_format.type != "text")
    if not structured:  # a loop, not any(...): no generator on every call
        for feature in chat_options.features:
            if hasattr(feature, "output_type"):
                structured = True
                break
    # only the values that are set, in one pass: no dict of Nones filtered again on every call
    attributes: dict[str, Any] = {
        names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT,
        names.GEN_AI_PROVIDER_NAME: client.provider_name(),
    }
    model = chat_options.model or getattr(client.model, "model", None)
    if model is not None:
        attributes[names.GEN_AI_REQUEST_MODEL] = model
    for key, value in (
        (names.GEN_AI_REQUEST_TEMPERATURE, chat_options.temperature),
        (names.GEN_AI_REQUEST_MAX_TOKENS, chat_options.max_tokens),
        (names.GEN_AI_REQUEST_TOP_P, chat_options.top_p),
        (names.GEN_AI_REQUEST_SEED, chat_options.seed),
    ):
        if value is not None:
            attributes[key] = value
    if chat_options.stop:
        attributes[names.GEN_AI_REQUEST_STOP_SEQUENCES] = list(chat_options.stop)
    attributes[names.GEN_AI_REQUEST_STREAM] = stream
    attributes[names.GEN_AI_OUTPUT_TYPE] = "json" if structured else "text"
    extra_body = chat_options.extra_body
    conversation = _conversation_id(extra_body.get("conversation")) if extra_body else None
    if conversation is not None:
        attributes[names.GEN_AI_CONVERSATION_ID] = conversation
    base_url = getattr(client.base_url, "base_url", None)
    if isinstance(base_url, str) and base_url:
        host, port = _server(base_url)
        if host is not None:
            attributes[names.SERVER_ADDRESS] = host
        if port is not None:
            attributes[names.SERVER_PORT] = port
    return attributes


@functools.lru_cache(maxsize=64)
def _server(base_url: str) -> tuple[str | None, int | None]:
    """(host, port) of a base URL, parsed once per URL."""
    parts = urlsplit(base_url)
    return parts.hostname, parts.port or {"https": 443, "http": 80}.get(parts.scheme)


def response_attributes(response: ChatResponse[Any]) -> dict[str, Any]:
    """The attributes a response sets (those with a value): id, model, finish reasons, usage,
    retries, structured output."""
    values: dict[str, Any] = {}
    if response.model_id is not None:
        values[names.GEN_AI_RESPONSE_MODEL] = response.model_id
    if response.response_id is not None:
        values[names.GEN_AI_RESPONSE_ID] = response.response_id
    finish = response.finish_reason
    if finish:  # a `FinishReason` is its value: looked up, not rendered through the enum on every call
        values[names.GEN_AI_RESPONSE_FINISH_REASONS] = [_FINISH_VALUES.get(finish) or str(finish)]
    properties = response.additional_properties
    retries = properties.get(RETRIES_KEY)
    if retries:
        values[names.SO_RETRY_COUNT] = len(retries)
    raw = response.raw_representation
    if raw is not None and not isinstance(raw, list):  # a stream's raw representation is its events
        conversation = _raw_conversation(raw)
        found = _conversation_id(conversation) if conversation is not None else None
        if found is not None:
            values[names.GEN_AI_CONVERSATION_ID] = found
    usage = response.usage
    if usage is not None:
        for key, count in (
            (names.GEN_AI_USAGE_INPUT_TOKENS, usage.input_tokens),
            (names.GEN_AI_USAGE_OUTPUT_TOKENS, usage.output_tokens),
            (names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, usage.cached_input_tokens),
            (names.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS, usage.cache_creation_input_tokens),
            (names.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, usage.reasoning_tokens),
        ):
            if count is not None:
                values[key] = count
    info = properties.get(STRUCTURED_OUTPUT_KEY)
    if info is not None:
        structured_attributes(info, values)
    return values


def _raw_conversation(raw: Any) -> Any:
    """The `conversation` of a raw answer (a Responses API one has it)."""
    kind: type = type(raw)
    if _may_have_conversation(kind):
        return getattr(raw, "conversation", None)
    extra = getattr(raw, "__pydantic_extra__", None)  # a pydantic model's fields beyond its declared ones
    return extra.get("conversation") if isinstance(extra, dict) else None


@functools.lru_cache(maxsize=64)
def _may_have_conversation(kind: type) -> bool:
    """False for a pydantic model that declares no `conversation` field (a Chat Completion): on it
    `getattr` would raise and catch an AttributeError on every call."""
    declared = getattr(kind, "model_fields", None)
    return not isinstance(declared, dict) or "conversation" in declared


def structured_info(error: OutputError) -> dict[str, Any]:
    """The structured-output run an `OutputError` ended: schema, strategy, attempts, outcome."""
    response_info = getattr(error.response, "additional_properties", {}).get(STRUCTURED_OUTPUT_KEY)
    info = dict(response_info) if isinstance(response_info, dict) else {}
    strategies = [attempt.strategy for attempt in error.attempts if attempt.strategy]
    info.setdefault("attempts", len(error.attempts) or None)
    info.setdefault("strategy", strategies[-1] if strategies else None)
    info.setdefault("outcome", next((o for kind, o in _OUTCOMES.items() if isinstance(error, kind)), "invalid"))
    return info


_STRUCTURED_KEYS = (
    ("name", names.SO_SCHEMA_NAME),
    ("strategy", names.SO_STRATEGY),
    ("attempts", names.SO_ATTEMPTS),
    ("outcome", names.SO_OUTCOME),
)


def structured_attributes(info: Any, into: dict[str, Any] | None = None) -> dict[str, Any]:
    """`so_middleware.structured_output.*` from a run's info dict (valid str/int values only),
    added to `into` when given (one dict per call, not one more)."""
    values: dict[str, Any] = {} if into is None else into
    if isinstance(info, dict):
        for field, key in _STRUCTURED_KEYS:
            value = info.get(field)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                values[key] = value
    return values


def _conversation_id(conversation: Any) -> str | None:
    """The id of a Responses API conversation: given as a string, `{"id": ...}` or an object with `.id`."""
    if isinstance(conversation, str):
        return conversation or None
    found = conversation.get("id") if isinstance(conversation, Mapping) else getattr(conversation, "id", None)
    return found if isinstance(found, str) and found else None
