"""Response caching: the same request is answered from a store instead of the model.

    client = with_cache(OpenAIChatClient(AsyncOpenAI(), model="gpt-4o-mini"))  # in memory, 256 entries
    client = with_cache(adapter, store=disk_store(".cache/llm"))  # on disk: pip install 'so-middleware[cache]'

**Key:** a SHA-256 of a canonical JSON of the request: the messages (roles, contents, names), every
option (nothing cut, however deep), the output type, and each feature's class, plain-data
attributes (strings, numbers, lists and dicts of them, types; `None` and other objects are left
out) and output type (a `StructuredOutput`'s type, mode and settings). Raw bytes count by their
hash. A feature nothing can be read from still keys by its class, never breaks the call. Entries
are namespaced by the wrapped client's `provider_name` and `model`, so layers over different
models can share one store.
A type keys by what it validates, not by its name or JSON schema alone: its pydantic core schema,
each validator function described by its code, defaults, closure values and the module constants
it reads, as they were when the type was first keyed (state it reads elsewhere, such as a
database, is not seen: add it with `key=`). What
cannot be described stably (a class pickle cannot find by name, an object pickle refuses) keys by
identity: it can miss, never answer another request. A request nested too deeply to describe is
not cached. `key=(messages, options, output_type) -> str | None` replaces the request part; `None`
skips the cache.

**Sampling:** calls with `temperature` > 0 are cached too: a cache is asked for to get the same
answer again. To keep sampled calls live, say so:
`key=lambda m, o, t: None if o.temperature else request_key(m, o, t)`.

**What is stored:** only a complete answer. An error, a stream closed or broken before its end,
and a response that cannot be stored (a value the disk store cannot pickle: logged as a warning)
are not. The SDK's raw objects (`raw_representation`) are left out. A hit is a fresh copy with
`additional_properties["so_middleware.cache_hit"] = True`.

**Streams** replay a hit: the same updates (each with the `partial_value` it had when it was
streamed: a snapshot, where the live stream's is a view that keeps growing), then the same final
response. A hit stored by a non-streaming call streams as one update holding the whole answer. A
stream's updates and final response are stored once the stream has ended.

**Stores:** anything with `get(key)` and `set(key, value)`: `MemoryStore` (a bounded LRU, the
default), `disk_store(directory)` (a `diskcache.Cache`, whose calls run in a worker thread; the
directory it creates is `0700`, the files it creates `0600`).
**Order:** below `with_structured_output` each model call of a run (re-asks too) is cached and the
answer is validated again; above it, the validated response is cached whole.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio

from ...core import (
    CACHE_HIT_KEY,
    ChatClient,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ChatStream,
    DelegatingChatClient,
    LayerCall,
    MessageInput,
    OptionsInput,
    ResponseStream,
    UserError,
    as_messages,
)
from ._key import digest, request_key
from ._stores import CacheStore, MemoryStore, disk_store

__all__ = ["CACHE_HIT_KEY", "CacheStore", "CachingChatClient", "MemoryStore", "disk_store", "request_key", "with_cache"]

logger = logging.getLogger("so_middleware")
KeyFunction = Callable[[list[ChatMessage], ChatOptions, Any], "str | None"]


def _stored(response: ChatResponse[Any], updates: Sequence[ChatResponseUpdate[Any]] | None) -> dict[str, Any]:
    """What goes into the store: the answer without the SDK's raw objects."""
    clean = copy.copy(response)
    clean.raw_representation = None
    clean.messages = [dataclasses.replace(message, raw_representation=None) for message in response.messages]
    clean.additional_properties = dict(response.additional_properties)
    kept = None if updates is None else [dataclasses.replace(u, raw_representation=None) for u in updates]
    return {"response": clean, "updates": kept}


def _snapshot(update: ChatResponseUpdate[Any], done: dict[int, Any]) -> ChatResponseUpdate[Any]:
    """`update` as it is now: its `partial_value` is a live view that later updates keep changing.

    `done` holds the items completed so far (never changed again): snapshots share them, so a
    long list is not copied whole at every update."""
    done.update((id(item), item) for item in update.completed_items)
    if update.partial_value is None:
        return update
    return dataclasses.replace(update, partial_value=copy.deepcopy(update.partial_value, dict(done)))


def _replayed(response: ChatResponse[Any]) -> list[ChatResponseUpdate[Any]]:
    """A response cached by a non-streaming call, as one update per message (the last one ends it)."""
    updates: list[ChatResponseUpdate[Any]] = [
        ChatResponseUpdate(list(m.contents), role=m.role) for m in response.messages
    ]
    updates = updates or [ChatResponseUpdate()]
    last = updates[-1]
    last.usage, last.finish_reason = response.usage, response.finish_reason
    last.response_id, last.model_id = response.response_id, response.model_id
    return updates


class CachingChatClient(DelegatingChatClient):
    """Answers a request seen before from `store`; stores complete answers only.

    Example:
        client = CachingChatClient(adapter, store=MemoryStore(maxsize=100))
        first = await client.get_response("Capital of France?")
        again = await client.get_response("Capital of France?")  # from the store, no model call
        again.additional_properties["so_middleware.cache_hit"]  # True
    """

    def __init__(
        self, inner: ChatClient | Any, *, store: CacheStore | None = None, key: KeyFunction | None = None
    ) -> None:
        if store is not None and not (callable(getattr(store, "get", None)) and callable(getattr(store, "set", None))):
            raise UserError(f"store must have get(key) and set(key, value) methods, not {type(store).__name__}")
        super().__init__(inner)
        self._self_store = MemoryStore() if store is None else store
        self._self_key = key

    @property
    def store(self) -> CacheStore:
        """Where this layer keeps its entries."""
        return self._self_store

    def respond(self, call: LayerCall) -> Awaitable[ChatResponse[Any]]:
        """Answer from the store when the request was seen, else call the inner client and store."""
        key = self.key_of(call.messages, call.options, call.output_type)
        if key is None:
            return super().respond(call)
        return self._respond(key, lambda: super(CachingChatClient, self).respond(call))

    def stream(self, call: LayerCall) -> ChatStream:
        """The same, streamed: a stored answer is replayed as a stream."""
        key = self.key_of(call.messages, call.options, call.output_type)
        if key is None:
            return super().stream(call)
        cached = _CachedStream(self, key, lambda: super(CachingChatClient, self).stream(call))
        return ResponseStream(cached.updates(), cached.final_response)

    def key_of(self, messages: MessageInput, options: OptionsInput, output_type: Any) -> str | None:
        """The store key of a request, or None when it is not to be cached."""
        chat_options = ChatOptions.coerce(options)
        if chat_options.starts_background_run or chat_options.continuation_token is not None:
            return None  # a background run's state changes from one call to the next
        custom = self._self_key
        request = (
            request_key(messages, options, output_type)
            if custom is None
            else custom(as_messages(messages), chat_options, output_type)
        )
        if request is None:
            return None
        client = self.__wrapped__
        return digest([getattr(client, "provider_name", None), getattr(client, "model", None), request])

    async def _respond(self, key: str, call: Callable[[], Awaitable[ChatResponse[Any]]]) -> ChatResponse[Any]:
        entry = await self.load(key)
        if entry is not None:
            return entry["response"]  # type: ignore[no-any-return]
        response = await call()
        await self.save(key, _stored(response, None))
        return response

    async def load(self, key: str) -> dict[str, Any] | None:
        """The entry stored under `key` (a fresh copy, marked as a hit), or None."""
        try:
            entry = await self._run(self._self_store.get, key)
        except Exception:  # an unreadable entry (an older version, a damaged file) is a miss
            logger.warning("so_middleware cache: could not read an entry; calling the model", exc_info=True)
            return None
        if not isinstance(entry, dict) or not isinstance(entry.get("response"), ChatResponse):
            return None
        entry["response"].additional_properties[CACHE_HIT_KEY] = True
        return entry

    async def save(self, key: str, entry: dict[str, Any]) -> None:
        try:
            await self._run(self._self_store.set, key, entry)
        except Exception as error:  # storing never breaks a call
            logger.warning("so_middleware cache: response not stored: %s: %s", type(error).__name__, error)

    async def _run(self, method: Callable[..., Any], *args: Any) -> Any:
        if isinstance(self._self_store, MemoryStore):
            return method(*args)
        return await anyio.to_thread.run_sync(method, *args)


class _CachedStream:
    """One streamed call: replayed from the store, or streamed from the inner client and stored."""

    def __init__(self, layer: CachingChatClient, key: str, call: Callable[[], ChatStream]) -> None:
        self._layer = layer
        self._key = key
        self._call = call
        self._final: ChatResponse[Any] | None = None

    async def updates(self) -> AsyncIterator[ChatResponseUpdate[Any]]:
        entry = await self._layer.load(self._key)
        if entry is not None:
            self._final = entry["response"]
            for update in entry["updates"] if entry["updates"] is not None else _replayed(entry["response"]):
                yield update
            return
        inner = self._call()
        seen: list[ChatResponseUpdate[Any]] = []
        done: dict[int, Any] = {}
        try:
            async for update in inner:
                seen.append(_snapshot(update, done))
                yield update
            self._final = await inner.get_final_response()
        finally:
            if not inner.is_complete:
                with anyio.CancelScope(shield=True):
                    await inner.aclose()
        await self._layer.save(self._key, _stored(self._final, seen))

    async def final_response(self, updates: Sequence[Any]) -> ChatResponse[Any]:
        if self._final is None:
            raise RuntimeError("the stream has not been opened")
        return self._final


def with_cache(
    client: ChatClient | Any, *, store: CacheStore | None = None, key: KeyFunction | None = None
) -> CachingChatClient:
    """Wrap `client` in a `CachingChatClient` (an in-memory LRU of 256 entries unless `store=` is given).

    Example:
        client = with_cache(adapter, store=disk_store(".cache/llm"))
    """
    return CachingChatClient(client, store=store, key=key)
