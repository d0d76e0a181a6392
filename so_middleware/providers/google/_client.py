"""`GeminiChatClient`: the Gemini API adapter, over `google-genai`'s `models.generate_content`.

The SDK client's async side (`client.aio.models`) is used for every call, so one `genai.Client`
serves both the async calls and the `*_sync` entry points (which run on so_middleware's own loop).
The SDK's own retries are off for each call (the retries layer retries, by the classification of
the error), and the call's deadline becomes the request's timeout.

A request goes through the codec in `so_middleware.wire.gemini`; the same `genai.Client` reaches
the Gemini Developer API or Vertex AI, as it was made.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
from collections.abc import AsyncIterator
from typing import Any, ClassVar

from google import genai

from ...core import (
    BaseChatClient,
    Capabilities,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FinishReason,
    FunctionCallContent,
    UserError,
    redact_url,
    seconds_left,
)
from ...wire.gemini import GeminiStreamReader, request_to_wire, response_from_wire
from .._chunks import read_chunks
from .._openai_privates import genai_base_url, genai_never_retries
from .._sdk_client import DEFAULT_IDLE_TIMEOUT, seconds_or_none
from .._sdk_use import sdk_boundary
from ._profiles import profile_for

__all__ = ["DEFAULT_IDLE_TIMEOUT", "GeminiChatClient"]

_DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/"
_RAW_ANSWER = {"should_return_http_response": True}  # a config field the SDK reads and does not send


class GeminiChatClient(BaseChatClient):
    """A ChatClient over a `google.genai.Client` (Gemini Developer API or Vertex AI).

    The capability profile follows the model (`profile_for`): JSON Schema structured output
    (`response_json_schema`) on every active model, the OpenAPI-subset `response_schema` on the
    1.x and 2.0 families; `capabilities=` overrides it.

    Example:
        client = GeminiChatClient(genai.Client(), "gemini-2.5-flash")
        response = await client.get_response("Hello", options={"instructions": "Be brief."})
        print(response.text, response.usage, response.finish_reason)
    """

    provider_name: ClassVar[str] = "gcp.gemini"

    def __init__(
        self,
        sdk_client: genai.Client,
        model: str | None = None,
        *,
        capabilities: Capabilities | None = None,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        if not isinstance(sdk_client, genai.Client):
            raise UserError(f"GeminiChatClient needs a google.genai.Client, not {type(sdk_client).__name__}")
        self.sdk_client = sdk_client
        self.model = model
        self.base_url = redact_url(genai_base_url(sdk_client) or _DEFAULT_BASE_URL)
        self.idle_timeout = seconds_or_none("idle_timeout", idle_timeout)
        self.capabilities = capabilities or profile_for(model)
        self._capabilities_given = capabilities is not None

    def capabilities_for(self, model: str, capabilities: Capabilities | None = None) -> Capabilities:
        """The profile of a call to `model` (a per-call `options.model`): `capabilities` or the one
        given to the adapter, else the one `profile_for(model)` picks.

        Example: `GeminiChatClient(client, "gemini-2.5-flash").capabilities_for("gemini-2.0-flash").name == "gemini-openapi"`.
        """
        if capabilities is not None and capabilities is not self.capabilities:
            return capabilities
        return self.capabilities if self._capabilities_given else profile_for(model)

    def request_for(self, messages: list[ChatMessage], options: ChatOptions) -> dict[str, Any]:
        """The `generate_content` keyword arguments this adapter would send (for inspection and tests)."""
        request = request_to_wire(messages, options, model=self.model)
        http_options: dict[str, Any] = {}
        attempts = 1 + (options.sdk_max_retries or 0)
        if attempts > 1 or not genai_never_retries(self.sdk_client):
            http_options["retry_options"] = {"attempts": attempts}
        left = seconds_left()
        if left is not None:
            http_options["timeout"] = max(1, math.ceil(left * 1000))  # milliseconds
        if http_options:  # per-call options cost the SDK a merge and copy of its own: only when they change something
            request["config"] = {"http_options": http_options, **request["config"]}
        return request

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        request = self.request_for(messages, options)
        config = request["config"]
        models = self.sdk_client.aio.models
        with sdk_boundary(self.sdk_client, is_async=True):
            # The SDK's documented raw answer: its body, read as JSON by the codec, not first
            # validated into a `GenerateContentResponse` and its parts, which the codec does not need.
            response = await models.generate_content(**{**request, "config": {**config, **_RAW_ANSWER}})
            answer = _body(response)
            token = _continuation_token(answer) if config.get("automatic_continuation") is not False else None
            if token is None:
                return response_from_wire(answer)
            # A hop that stops to be continued: the SDK follows the rest and merges those hops.
            rest = await models.generate_content(**{**request, "config": {**config, "continuation_token": token}})
        return _joined(response_from_wire(answer), response_from_wire(rest))

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        request = self.request_for(messages, options)
        reader = GeminiStreamReader()
        idle = options.idle_timeout if options.idle_timeout is not None else self.idle_timeout
        with sdk_boundary(self.sdk_client, is_async=True):
            chunks: Any = await self.sdk_client.aio.models.generate_content_stream(**request)
            updates = read_chunks(chunks, reader, idle=idle, source="Gemini")
            async with contextlib.aclosing(updates):  # closing this stream closes the SDK's at once
                async for update in updates:
                    yield update

    def __repr__(self) -> str:
        return f"GeminiChatClient(genai.Client(base_url={self.base_url!r}), model={self.model!r})"


def _body(response: Any) -> Any:
    """The answer's JSON when the SDK handed back its HTTP body, else the SDK's answer itself (an
    instrumented `generate_content` may return its own)."""
    http = getattr(response, "sdk_http_response", None)
    body = getattr(http, "body", None)
    return json.loads(body) if body else response


def _continuation_token(answer: Any) -> bytes | None:
    """The token of a hop the SDK would continue (a first candidate with a token and no end other
    than `CONTINUATION`), as the SDK sends it back; None for a whole answer."""
    if not isinstance(answer, dict):
        return None
    candidates = answer.get("candidates")
    first = candidates[0] if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict) else {}
    token = first.get("continuationToken") or first.get("continuation_token")
    if not isinstance(token, str) or first.get("finishReason", first.get("finish_reason")) not in (
        None,
        "CONTINUATION",
    ):
        return None
    return base64.b64decode(token)


def _joined(first: ChatResponse[Any], rest: ChatResponse[Any]) -> ChatResponse[Any]:
    """One answer of a continued call: the hops' contents in order, their counts summed, the end,
    ids and model of the last (a call made in the first hop makes a stop a tool-call end)."""
    contents = [content for response in (first, rest) for message in response.messages for content in message.contents]
    finish = rest.finish_reason
    if finish is FinishReason.STOP and any(isinstance(content, FunctionCallContent) for content in contents):
        finish = FinishReason.TOOL_CALLS
    raw = [first.raw_representation, rest.raw_representation]
    usage = first.usage + rest.usage if first.usage is not None else rest.usage
    return ChatResponse(
        ChatMessage("assistant", contents, raw_representation=raw),
        usage=usage,
        finish_reason=finish,
        response_id=rest.response_id,
        model_id=rest.model_id,
        raw_representation=raw,
    )
