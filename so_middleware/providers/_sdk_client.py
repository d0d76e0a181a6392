"""`SDKChatClient`: what every adapter over an official SDK client shares.

The SDK client, sync or async; the model; the capability profile; the SDK client of one call
(with the SDK's own retries as the call asks); handing the SDK client out through `get_service`; the echoed prefill.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, ClassVar, Protocol, TypeVar

import httpx2

from ..core import BaseChatClient, Capabilities, ChatMessage, ChatOptions, ChatResponseUpdate, UserError
from ._bridge import call_sdk, close_sdk_stream, interrupted, is_stream_break, iterate_sdk_stream
from ._discovery import PROBE_TIMEOUT, ServerInfo, identify_server, is_hosted, server_root
from ._prefill import prefill_of

__all__ = ["EventReader", "SDKChatClient"]

K = TypeVar("K")


class EventReader(Protocol):
    """Turns one SDK stream event into an update (or None), keeping the text and whether the
    terminal event came."""

    text: list[str]
    finished: bool

    def read(self, event: Any) -> ChatResponseUpdate[Any] | None: ...


class SDKChatClient(BaseChatClient):
    """Base of the adapters: subclasses name their SDK's client types and default profile."""

    sdk_types: ClassVar[tuple[type, ...]] = ()  # every accepted SDK client type
    async_sdk_types: ClassVar[tuple[type, ...]] = ()  # the async ones among them
    sdk_client: Any

    server_info: ServerInfo | None = None  # what discovery found, once it ran
    sdk_base_url: str  # the SDK client's base URL

    def __init__(
        self, sdk_client: Any, model: str | None, capabilities: Capabilities | None, *, discover: bool = True
    ) -> None:
        if not isinstance(sdk_client, self.sdk_types):  # narrows to object: keep the Any below
            accepted = " or ".join(f"{t.__module__.split('.')[0]}.{t.__name__}" for t in self.sdk_types)
            raise UserError(f"{type(self).__name__} needs an {accepted} client, not {type(sdk_client).__name__}")
        self.sdk_client = sdk_client
        self._sdk_copy: tuple[Any, int, Any] | None = None  # (sdk_client, retries, its copy), made on need
        self.model = model
        self.base_url = self.sdk_base_url = str(self.sdk_client.base_url)
        self.capabilities = capabilities or self.default_profile(self.sdk_base_url, model)
        # A server reached by base URL alone is identified on first use; a profile given, a
        # hosted API or discover=False keep the profile above.
        self.discovery_pending = capabilities is None and discover and not is_hosted(self.sdk_base_url)

    def default_profile(self, base_url: str, model: str | None) -> Capabilities:
        """The profile when none is given and nothing is discovered: from the base URL (and model)."""
        raise NotImplementedError

    def server_profile(self, info: ServerInfo) -> Capabilities:
        """The profile for a discovered server on this adapter's route."""
        raise NotImplementedError

    async def discover_capabilities(self) -> Capabilities:
        """Identify the server once (shared by every adapter on the same server root), then
        use the shipped profile for what was found; a server that is not recognised keeps the
        generic profile. See `BaseChatClient.discover_capabilities`."""
        if not self.discovery_pending:
            return self.capabilities
        info = await identify_server(server_root(self.sdk_base_url), self._probe)
        self.server_info = info
        self.capabilities = self.server_profile(info)
        self.discovery_pending = False
        return self.capabilities

    async def _probe(self, path: str) -> Any:
        """GET `path` under the server root through the SDK client (its auth and transport),
        with no retries and a short timeout; the JSON body of a 200, else None."""
        sdk = self.sdk_client.with_options(max_retries=0, timeout=PROBE_TIMEOUT)
        url = server_root(self.sdk_base_url) + path
        response = await call_sdk(self.is_async, sdk.get, path=url, cast_to=httpx2.Response)
        if response.status_code != 200:
            return None
        if not self.is_async:
            return response.json()
        await response.aread()
        return response.json()

    @property
    def is_async(self) -> bool:
        """True over an async SDK client (`AsyncOpenAI`, `AsyncAnthropic`)."""
        return isinstance(self.sdk_client, self.async_sdk_types)

    def sdk_for(self, options: ChatOptions) -> Any:
        """The SDK client for one call: with `options.sdk_max_retries` set, a copy of it with that
        many retries of its own (`with_options`, sharing the connection pool); `sdk_client` itself
        never changes. A retry layer above asks for 0 this way."""
        retries = options.sdk_max_retries
        if retries is None or retries == getattr(self.sdk_client, "max_retries", None):
            return self.sdk_client
        made = self._sdk_copy
        if made is None or made[0] is not self.sdk_client or made[1] != retries:
            made = self._sdk_copy = (self.sdk_client, retries, self.sdk_client.with_options(max_retries=retries))
        return made[2]

    def get_service(self, kind: type[K]) -> K | None:
        """This adapter, or its SDK client when `kind` is the SDK client's type."""
        if isinstance(self.sdk_client, kind):
            return self.sdk_client
        return super().get_service(kind)

    def echoed_prefill(self, messages: list[ChatMessage]) -> str:
        """The prefill this backend will echo back ("" when it does not echo, or there is none)."""
        return prefill_of(messages) if self.capabilities.prefill_echoed else ""

    async def read_events(
        self, stream: Any, reader: EventReader, *, ending: str, failures: tuple[type[BaseException], ...] = ()
    ) -> AsyncGenerator[ChatResponseUpdate[Any], None]:
        """Yield the updates of an SDK event stream, and close it however iteration ends.

        A broken stream (cut connection, malformed events, one of `failures`, or no terminal
        event, named by `ending`) raises `StreamInterruptedError` with the text received so far.
        """
        updates = 0
        try:
            try:
                async for event in iterate_sdk_stream(self.is_async, stream):
                    update = reader.read(event)
                    if update is not None:
                        updates += 1
                        yield update
            except Exception as error:
                if not (isinstance(error, failures) or is_stream_break(error)):
                    raise
                raise interrupted(error, "".join(reader.text), updates) from error
            if not reader.finished:
                raise interrupted(EOFError(f"the event stream ended without {ending}"), "".join(reader.text), updates)
        finally:
            await close_sdk_stream(self.is_async, stream)
