"""Response caching: the same request is answered from a store instead of the model.

    client = with_cache(OpenAIChatClient(AsyncOpenAI(), model="gpt-4o-mini"))  # in memory, 256 entries
    client = with_cache(adapter, store=disk_store(".cache/llm"))  # on disk: pip install 'so-middleware[cache]'

**Key:** a SHA-256 of a canonical JSON of the request: the messages (roles, contents, names), every
option, the output type's JSON schema, and each feature's class, plain-data attributes (strings,
numbers, lists and dicts of them; `None` and objects are left out) and output schema (a
`StructuredOutput`'s type, mode and settings). Raw bytes count by their hash. A feature nothing can
be read from still keys by its class, never breaks the call. Entries are namespaced by the wrapped
client's `provider_name` and `model`, so layers over different models can share one store.
`key=(messages, options, output_type) -> str | None` replaces the request part; `None` skips the cache.

**Sampling:** calls with `temperature` > 0 are cached too: a cache is asked for to get the same
answer again. To keep sampled calls live, say so:
`key=lambda m, o, t: None if o.temperature else request_key(m, o, t)`.

**What is stored:** only a complete answer. An error, a stream closed or broken before its end,
and a response that cannot be stored (a value the disk store cannot pickle: logged as a warning)
are not. The SDK's raw objects (`raw_representation`) are left out. A hit is a fresh copy with
`additional_properties["so_middleware.cache_hit"] = True`.

**Streams** replay a hit: the same updates, then the same final response. A hit stored by a
non-streaming call streams as one update holding the whole answer. A stream's updates and final
response are stored once the stream has ended.

**Stores:** anything with `get(key)` and `set(key, value)`: `MemoryStore` (a bounded LRU, the
default), `disk_store(directory)` (a `diskcache.Cache`, whose calls run in a worker thread).
**Order:** below `with_structured_output` each model call of a run (re-asks too) is cached and the
answer is validated again; above it, the validated response is cached whole.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from enum import Enum
from typing import Any, Protocol

import anyio

from .._client import ChatClient, ChatStream
from .._delegating import DelegatingChatClient
from .._exceptions import UserError
from .._options import ChatOptions, OptionsInput
from .._stream import ResponseStream
from .._types import ChatMessage, ChatResponse, ChatResponseUpdate, MessageInput, as_messages
from ..schema import OutputSchema

__all__ = ["CACHE_HIT_KEY", "CacheStore", "CachingChatClient", "MemoryStore", "disk_store", "request_key", "with_cache"]

CACHE_HIT_KEY = "so_middleware.cache_hit"
logger = logging.getLogger("so_middleware")
KeyFunction = Callable[[list[ChatMessage], ChatOptions, Any], "str | None"]


class CacheStore(Protocol):
    """What `with_cache` needs of a store; `diskcache.Cache` is one as it is."""

    def get(self, key: str) -> Any: ...

    def set(self, key: str, value: Any) -> Any: ...


class MemoryStore:
    """An in-memory LRU of at most `maxsize` entries; values are copied in and out, never shared.

    Example: `with_cache(client, store=MemoryStore(maxsize=1000))`.
    """

    def __init__(self, maxsize: int = 256) -> None:
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 1:
            raise UserError(f"maxsize must be an int of at least 1, not {maxsize!r}")
        self._maxsize = maxsize
        self._entries: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()  # sync entry points call from other threads

    def get(self, key: str) -> Any:
        """A copy of the value stored under `key`, or None; marks it as recently used."""
        with self._lock:
            if key not in self._entries:
                return None
            self._entries.move_to_end(key)
            return copy.deepcopy(self._entries[key])

    def set(self, key: str, value: Any) -> None:
        """Store a copy of `value`, evicting the least recently used entry beyond `maxsize`."""
        stored = copy.deepcopy(value)
        with self._lock:
            self._entries[key] = stored
            self._entries.move_to_end(key)
            while len(self._entries) > self._maxsize:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def disk_store(directory: str, **settings: Any) -> Any:
    """A `diskcache.Cache` in `directory` (`settings` go to it, e.g. `size_limit=2**30`).

    Example: `with_cache(client, store=disk_store(".cache/llm"))`.
    """
    try:
        import diskcache
    except ImportError as error:
        raise ImportError("disk_store needs diskcache: pip install 'so-middleware[cache]'") from error
    return diskcache.Cache(directory, **settings)


def request_key(messages: MessageInput, options: OptionsInput = None, output_type: Any = None) -> str:
    """The SHA-256 of a canonical JSON of a request (the default `key=`); see the module docstring.

    Example: `request_key("Hi", {"temperature": 0}) == request_key(["Hi"], ChatOptions(temperature=0))`.
    """
    request = {
        "messages": _describe(as_messages(messages)),
        "options": _describe(ChatOptions.coerce(options)),
        "output_type": None if output_type is None else _describe_type(output_type),
    }
    return _digest(request)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _describe(value: Any, depth: int = 0) -> Any:
    """Plain JSON data for `value`; objects give their class, plain attributes and output schema."""
    if isinstance(value, Enum):
        return _describe(value.value, depth)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return {"sha256": hashlib.sha256(value).hexdigest()}
    if depth > 20:
        return _name(type(value))
    if isinstance(value, Mapping):
        return {str(k): _describe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_describe(item, depth + 1) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_describe(item, depth + 1) for item in value), key=_digest)
    if isinstance(value, type):
        return _name(value)
    if dataclasses.is_dataclass(value):
        fields = (f.name for f in dataclasses.fields(value) if f.name != "raw_representation")
        return {"__type__": _name(type(value)), **{f: _describe(getattr(value, f), depth + 1) for f in fields}}
    described: dict[str, Any] = {"__type__": _name(type(value))}
    schema = getattr(value, "output_schema", None)
    if isinstance(schema, OutputSchema):
        described["output_schema"] = _schema_of(schema)
    for name, attribute in sorted(getattr(value, "__dict__", {}).items()):
        if not name.startswith("_") and attribute is not None and _is_plain(attribute):
            described[name] = _describe(attribute, depth + 1)
    return described


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str, Enum)):
        return True
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    return isinstance(value, (list, tuple)) and all(_is_plain(item) for item in value)


def _describe_type(output_type: Any) -> Any:
    try:
        return _schema_of(OutputSchema(output_type, strict=False))
    except Exception:  # a type only the layer below understands: its name still keys it
        return repr(output_type)


def _schema_of(schema: OutputSchema) -> Any:
    try:
        return {"name": schema.name(), "schema": schema.json_schema("json-schema")}
    except Exception:
        return repr(schema.output_type)


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _stored(response: ChatResponse[Any], updates: Sequence[ChatResponseUpdate[Any]] | None) -> dict[str, Any]:
    """What goes into the store: the answer without the SDK's raw objects."""
    clean = copy.copy(response)
    clean.raw_representation = None
    clean.messages = [dataclasses.replace(message, raw_representation=None) for message in response.messages]
    clean.additional_properties = dict(response.additional_properties)
    kept = None if updates is None else [dataclasses.replace(u, raw_representation=None) for u in updates]
    return {"response": clean, "updates": kept}


def _replayed(response: ChatResponse[Any]) -> list[ChatResponseUpdate[Any]]:
    """A response cached by a non-streaming call, as one update per message."""
    return [
        ChatResponseUpdate(
            list(m.contents),
            role=m.role,
            usage=response.usage,
            finish_reason=response.finish_reason,
            response_id=response.response_id,
            model_id=response.model_id,
        )
        for m in response.messages
    ]


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

    def process(
        self, messages: MessageInput, *, options: OptionsInput, stream: bool, output_type: Any
    ) -> Awaitable[ChatResponse[Any]] | ChatStream:
        """Answer from the store when the request was seen, else call the inner client and store."""
        key = self.key_of(messages, options, output_type)
        inner = self.__wrapped__
        if key is None:
            return inner.get_response(messages, options=options, stream=stream, output_type=output_type)  # type: ignore[no-any-return]
        if stream:
            call = _CachedStream(
                self, key, lambda: inner.get_response(messages, options=options, stream=True, output_type=output_type)
            )
            return ResponseStream(call.updates(), call.final_response)
        return self._respond(key, lambda: inner.get_response(messages, options=options, output_type=output_type))

    def key_of(self, messages: MessageInput, options: OptionsInput, output_type: Any) -> str | None:
        """The store key of a request, or None when it is not to be cached."""
        custom = self._self_key
        request = (
            request_key(messages, options, output_type)
            if custom is None
            else custom(as_messages(messages), ChatOptions.coerce(options), output_type)
        )
        if request is None:
            return None
        client = self.__wrapped__
        return _digest([getattr(client, "provider_name", None), getattr(client, "model", None), request])

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
        try:
            async for update in inner:
                seen.append(update)
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
