"""`GeminiChatClient`: the Gemini API adapter, over `google-genai`'s `models.generate_content`.

The SDK client's async side (`client.aio.models`) is used for every call, so one `genai.Client`
serves both the async calls and the `*_sync` entry points (which run on so_middleware's own loop).
The SDK's own retries are off for each call (the retries layer retries, by the classification of
the error), and the call's deadline becomes the request's timeout.

A request goes through the codec in `so_middleware.wire.gemini`; the same `genai.Client` reaches
the Gemini Developer API or Vertex AI, as it was made. Where `_rest.rest_request` writes the
request's REST body (the codec's fields), it goes through the SDK client's lower `async_request`
and `async_request_streamed`, which still do auth, base URL and Vertex routing, retries, timeouts
and the SDK's typed errors, and each answer or streamed chunk is read as JSON by the codec: the SDK's
request models and transforms and its per-chunk `GenerateContentResponse` are skipped. Any other
request, and every call while `generate_content` or `generate_content_stream` is wrapped
(instrumentation, a test double), goes through the SDK's own method.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
from collections.abc import AsyncGenerator, AsyncIterator
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
from .._openai_privates import genai_api_client, genai_base_url, genai_never_retries
from .._own import owns_attribute, package_dir
from .._sdk_client import DEFAULT_IDLE_TIMEOUT, seconds_or_none
from .._sdk_use import sdk_boundary
from ._profiles import profile_for
from ._rest import rest_request

__all__ = ["DEFAULT_IDLE_TIMEOUT", "GeminiChatClient"]

_DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/"
_RAW_ANSWER = {"should_return_http_response": True}  # a config field the SDK reads and does not send
_GENAI_DIR = package_dir(genai)


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
        self._api_client = genai_api_client(sdk_client)

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

    def _rest(self, request: dict[str, Any], method: str) -> tuple[Any, str, dict[str, Any]] | None:
        """The SDK's API client, the model's path and the REST body, when this call goes the lower
        way (`method` of `client.aio.models` is the SDK's own and `rest_request` writes the body)."""
        api_client = self._api_client
        if api_client is None or not _is_the_sdks_own(self.sdk_client.aio.models, method):
            return None
        found = rest_request(request, vertex=bool(api_client.vertexai))
        return None if found is None else (api_client, *found)

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        request = self.request_for(messages, options)
        config = request["config"]
        models = self.sdk_client.aio.models
        rest = self._rest(request, "generate_content")
        with sdk_boundary(self.sdk_client, is_async=True):
            if rest is not None:
                api_client, path, body = rest
                sent = await api_client.async_request(
                    "post", f"{path}:generateContent", body, config.get("http_options")
                )
                answer = json.loads(sent.body) if sent.body else {}
            else:
                # The SDK's documented raw answer: its body, read as JSON by the codec, not first
                # validated into a `GenerateContentResponse` and its parts, which the codec does not need.
                response = await models.generate_content(**{**request, "config": {**config, **_RAW_ANSWER}})
                answer = _body(response)
            token = _continuation_token(answer) if config.get("automatic_continuation") is not False else None
            if token is None:
                return response_from_wire(answer)
            # A hop that stops to be continued: the SDK follows the rest and merges those hops.
            rest_of = await models.generate_content(**{**request, "config": {**config, "continuation_token": token}})
        return _joined(response_from_wire(answer), response_from_wire(rest_of))

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        request = self.request_for(messages, options)
        reader = GeminiStreamReader()
        idle = options.idle_timeout if options.idle_timeout is not None else self.idle_timeout
        rest = self._rest(request, "generate_content_stream")
        with sdk_boundary(self.sdk_client, is_async=True):
            if rest is None:
                chunks: Any = await self.sdk_client.aio.models.generate_content_stream(**request)
            else:
                chunks = self._hops(request, reader, *rest)
            updates = read_chunks(chunks, reader, idle=idle, source="Gemini")
            async with contextlib.aclosing(updates):  # closing this stream closes the SDK's at once
                async for update in updates:
                    yield update

    async def _hops(
        self, request: dict[str, Any], reader: GeminiStreamReader, api_client: Any, path: str, body: dict[str, Any]
    ) -> AsyncGenerator[Any, None]:
        """The chunks of a stream sent the lower way, each its JSON; a hop that stops to be
        continued (a continuation token, and `CONTINUATION` or no end) is followed by the SDK's own
        `generate_content_stream` from that token, as the SDK's stream follows it, its counts
        added to the first hop's."""
        config = request["config"]
        sent = await api_client.async_request_streamed(
            "post", f"{path}:streamGenerateContent?alt=sse", body, config.get("http_options")
        )
        token: str | None = None
        finish: str | None = None
        try:
            async with contextlib.aclosing(sent):
                async for response in sent:
                    chunk = json.loads(response.body) if response.body else {}
                    candidates = (
                        chunk.get("candidates") if type(chunk) is dict else None
                    )  # the reader says what is wrong
                    first = candidates[0] if type(candidates) is list and candidates else None
                    if type(first) is dict:
                        finish = first.get("finishReason") or finish
                        if first.get("continuationToken"):
                            token = first["continuationToken"]
                        elif first.get("finishReason") not in (None, "CONTINUATION"):
                            token = None
                    yield chunk
        except Exception:
            if not _resumes(config, token, finish):
                raise
        if not _resumes(config, token, finish):
            return
        reader.next_hop()
        resumed = {**config, "continuation_token": base64.b64decode(token or "")}
        rest: Any = await self.sdk_client.aio.models.generate_content_stream(**{**request, "config": resumed})
        async with contextlib.aclosing(rest):
            async for chunk in rest:
                yield chunk

    fresh_stream = _stream  # its reader makes a new update for every chunk

    def __repr__(self) -> str:
        return f"GeminiChatClient(genai.Client(base_url={self.base_url!r}), model={self.model!r})"


def _is_the_sdks_own(resource: Any, name: str) -> bool:
    """Whether `resource.<name>` is the SDK's own function: a wrapper put there by an
    instrumentation or a test sees every call."""
    return owns_attribute(resource, name, _GENAI_DIR)


def _resumes(config: dict[str, Any], token: str | None, finish: str | None) -> bool:
    """Whether the SDK's stream would go on from a hop that ended with `token` and `finish`."""
    return token is not None and finish in (None, "CONTINUATION") and config.get("automatic_continuation") is not False


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
