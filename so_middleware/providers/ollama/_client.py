"""`OllamaChatClient`: Ollama's native `/api/chat`, over the official `ollama` SDK.

The SDK's `AsyncClient` makes the calls (a sync `Client` is refused: the adapter is async at its
core and its `*_sync` entry points run on so_middleware's own loop). A request goes through the
codec in `so_middleware.wire.ollama`; the SDK's errors cross the one transport boundary.

The codec's body is sent as it is, not through the SDK's `chat`, which would rebuild the tools
through its own types, dropping the schema keywords they do not name (`anyOf`, `minimum`,
`additionalProperties`, ...), and would take no field it does not name. It goes as the bytes `chat`
sends (its field order, httpx's JSON encoding) through the SDK client's own httpx client: straight
to its transport (`DirectPost`, `_http.py`: the request built once per client, not on every call)
when that client's `send` would change nothing, else through the SDK's request method (the SDK does
the host, headers, HTTP errors and the NDJSON framing). Each answer is read as the plain JSON object
it is, not validated into the SDK's `ChatResponse` first; the errors are the SDK's own.
"""

from __future__ import annotations

import functools
import operator
import os
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import ollama

from ...core import (
    BaseChatClient,
    Capabilities,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    UserError,
    redact_url,
)
from ...wire.ollama import OllamaStreamReader, request_to_wire, response_from_wire
from .._chunks import read_chunks
from .._direct_post import DirectPost, direct_post
from .._openai_privates import ollama_base_url, ollama_http_client, ollama_post
from .._own import is_packages_own
from .._sdk_client import seconds_or_none
from .._sdk_use import sdk_boundary
from ._http import answer_of, chunks_of, encoded
from ._profiles import OLLAMA_NATIVE

__all__ = ["DEFAULT_IDLE_TIMEOUT", "OllamaChatClient"]

DEFAULT_IDLE_TIMEOUT = 300.0  # seconds without a chunk: a local model may first load for minutes

_OLLAMA_DIR = os.path.dirname(os.path.abspath(ollama.__file__)) + os.sep
_SENDING = ("_request", "_request_raw")  # the SDK's methods a call goes through
_sdk_methods = operator.attrgetter(*_SENDING)
# The fields of the SDK's `ChatRequest`, in the order `chat` writes them; others follow.
_FIELD_ORDER = ("model", "stream", "options", "format", "keep_alive", "messages", "tools", "think", "logprobs",
                "top_logprobs")  # fmt: skip


class OllamaChatClient(BaseChatClient):
    """A ChatClient over an `ollama.AsyncClient` (Ollama's native chat API).

    `keep_alive` (how long Ollama keeps the model loaded after the call) is sent with every call
    when given. Ollama's OpenAI-compatible routes stay reachable through the OpenAI adapter
    (`OpenAIChatClient(AsyncOpenAI(base_url="http://localhost:11434/v1"), ...)`).

    Example:
        client = OllamaChatClient(ollama.AsyncClient(), "llama3.2")
        response = await client.get_response("Hello", options={"instructions": "Be brief."})
        print(response.text, response.usage, response.finish_reason)
    """

    provider_name: ClassVar[str] = "ollama"

    def __init__(
        self,
        sdk_client: ollama.AsyncClient,
        model: str | None = None,
        *,
        capabilities: Capabilities | None = None,
        keep_alive: float | str | None = None,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        given: object = sdk_client  # typed as the SDK's, but a caller may pass anything
        if not isinstance(given, ollama.AsyncClient):
            hint = ": use ollama.AsyncClient()" if isinstance(given, ollama.Client) else ""
            raise UserError(f"OllamaChatClient needs an ollama.AsyncClient, not {type(given).__name__}{hint}")
        self.sdk_client = sdk_client
        self.model = model
        self.keep_alive = keep_alive
        self.base_url = redact_url(ollama_base_url(sdk_client) or "http://127.0.0.1:11434")
        self.capabilities = capabilities or OLLAMA_NATIVE
        self.idle_timeout = seconds_or_none("idle_timeout", idle_timeout)
        self._direct: DirectPost | None = None  # the last call's, kept while it fits
        self._own_methods: tuple[Any, ...] | None = None  # the SDK's sending methods, when its own

    def request_for(self, messages: list[ChatMessage], options: ChatOptions) -> dict[str, Any]:
        """The `AsyncClient.chat` keyword arguments this adapter would send (for inspection and tests)."""
        request = request_to_wire(messages, options, model=self.model)
        if self.keep_alive is not None:
            request.setdefault("keep_alive", self.keep_alive)
        return request

    async def _send(self, request: dict[str, Any], *, stream: bool) -> Any:
        """The answer (or, streamed, the async iterator of chunks) of `/api/chat` for `request`."""
        post = ollama_post(self.sdk_client)
        if post is None:  # the SDK moved its request method: its public call, with what it keeps
            chat: Any = self.sdk_client.chat  # its overloads are on a literal `stream`
            return await chat(**request, stream=stream)
        body = _in_sdk_order(request, stream)
        direct = self._direct_post()
        if direct is None:
            return await post(dict, "POST", "/api/chat", json=body, stream=stream)
        return chunks_of(direct, encoded(body)) if stream else await answer_of(direct, encoded(body))

    def _direct_post(self) -> DirectPost | None:
        """The `DirectPost` of the SDK's httpx client, unless the SDK's request method was wrapped
        or replaced (then that method sends, as it did before)."""
        sdk = self.sdk_client
        methods = _sdk_methods(type(sdk))
        if methods != self._own_methods:  # checked again only when they change
            own = all(is_packages_own(method, _OLLAMA_DIR) for method in methods)
            self._own_methods = methods if own else None
        if methods != self._own_methods or not vars(sdk).keys().isdisjoint(_SENDING):
            self._direct = None
        else:
            self._direct = direct_post(ollama_http_client(sdk), "/api/chat", self._direct)
        return self._direct

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        request = self.request_for(messages, options)
        with sdk_boundary(self.sdk_client, is_async=True):
            answer = await self._send(request, stream=False)
        return response_from_wire(answer)

    def _stream(self, messages: list[ChatMessage], options: ChatOptions) -> AsyncIterator[ChatResponseUpdate[Any]]:
        # the chunk reader's generator is the stream: the request is made and sent on its first read
        idle = options.idle_timeout if options.idle_timeout is not None else self.idle_timeout
        send = functools.partial(self._send_stream, messages, options)
        boundary = functools.partial(sdk_boundary, self.sdk_client, is_async=True)
        return read_chunks(send, OllamaStreamReader(), idle=idle, source="Ollama", boundary=boundary)

    async def _send_stream(self, messages: list[ChatMessage], options: ChatOptions) -> Any:
        return await self._send(self.request_for(messages, options), stream=True)

    fresh_stream = _stream  # its reader makes a new update for every chunk

    def __repr__(self) -> str:
        return f"OllamaChatClient(ollama.AsyncClient(host={self.base_url!r}), model={self.model!r})"


def _in_sdk_order(request: dict[str, Any], stream: bool) -> dict[str, Any]:
    """The body `chat` would send: its fields in its order (`tools` always, empty when there are
    none), then the others; `stream` is ours."""
    body = {"model": request.get("model"), "stream": stream}
    for name in _FIELD_ORDER:
        if name in request:
            body[name] = request[name]
        elif name == "tools":
            body[name] = []
    body.update(request)
    body["stream"] = stream
    return body
