"""DelegatingChatClient: pass-through, feature identity through a stack, the proxy contract."""

from __future__ import annotations

import copy
import importlib
import pickle
import pkgutil
from typing import Any

import pytest

import so_middleware
import so_middleware.middleware
from so_middleware import (
    ChatClient,
    ChatResponse,
    DelegatingChatClient,
    Feature,
    LayerCall,
    UserError,
    chain,
)
from so_middleware.testing import FakeChatClient

pytestmark = pytest.mark.anyio


class Tagging(Feature):
    """A feature nobody in the test stack knows."""


class CountingChatClient(DelegatingChatClient):
    """A layer that knows nothing of features."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self._self_calls = 0

    def respond(self, call: LayerCall) -> Any:
        self._self_calls += 1
        return super().respond(call)

    def stream(self, call: LayerCall) -> Any:
        self._self_calls += 1
        return super().stream(call)


class RenamingChatClient(DelegatingChatClient):
    """A layer that changes options (copy, then change) and keeps every feature."""

    def respond(self, call: LayerCall) -> Any:
        return super().respond(call.replace(options=call.options.replace(model="renamed")))

    def stream(self, call: LayerCall) -> Any:
        return super().stream(call.replace(options=call.options.replace(model="renamed")))


@pytest.mark.parametrize("stream", [False, True])
async def test_feature_reaches_innermost_as_same_object_through_three_layers(stream: bool) -> None:
    fake = FakeChatClient("hi")
    client = CountingChatClient(RenamingChatClient(CountingChatClient(fake)))
    feature = Tagging()
    options = {"features": [feature], "temperature": 0.1}
    if stream:
        response = await client.get_response("x", options=options, stream=True).get_final_response()
    else:
        response = await client.get_response("x", options=options)
    assert response.text == "hi"
    received = fake.calls[0].options
    assert received.features[0] is feature
    assert received.model == "renamed" and received.temperature == 0.1
    assert options == {"features": [feature], "temperature": 0.1}  # caller's dict untouched
    # attributes of the innermost client are reachable from the outermost
    assert client.model == "fake-model"
    assert client.calls is fake.calls
    assert client.capabilities is fake.capabilities
    assert isinstance(client, FakeChatClient)


def test_unhandled_feature_that_needs_a_layer_is_reported() -> None:
    class NeedsLayer(Feature):
        handled_by = "with_something"

    with pytest.raises(UserError, match="with_something"):
        FakeChatClient("x").get_response_sync("x", options={"features": [NeedsLayer()]})


def test_output_type_without_structured_output_layer_is_reported() -> None:
    with pytest.raises(UserError, match="with_structured_output"):
        CountingChatClient(FakeChatClient("1")).get_response_sync("x", output_type=int)


def test_non_chat_client_is_rejected_with_its_type() -> None:
    with pytest.raises(UserError, match=r"builtins\.dict"):
        CountingChatClient({})


def test_chain_builds_outermost_first() -> None:
    fake = FakeChatClient("x")
    client = chain(fake, CountingChatClient, RenamingChatClient)
    assert type(client) is CountingChatClient
    assert type(client.inner_client) is RenamingChatClient
    assert client.inner_client.inner_client is fake


def test_chain_names_a_bad_layer() -> None:
    with pytest.raises(UserError, match="layer 1"):
        chain(FakeChatClient("x"), CountingChatClient, lambda inner: "oops")  # type: ignore[arg-type,return-value]


def test_sync_entry_point_and_running_loop_error() -> None:
    client = CountingChatClient(FakeChatClient("hello"))
    assert client.get_response_sync("x").text == "hello"


async def test_sync_entry_point_inside_event_loop_raises() -> None:
    with pytest.raises(UserError, match="running event loop"):
        CountingChatClient(FakeChatClient("x")).get_response_sync("x")


def test_a_bare_attribute_set_in_a_layer_fails_loudly_and_names_the_way() -> None:
    class Counting(DelegatingChatClient):
        def __init__(self, inner: Any) -> None:
            super().__init__(inner)
            self.calls = 0  # FakeChatClient has `calls`: wrapt would overwrite the client's list

    fake = FakeChatClient("x")
    with pytest.raises(AttributeError) as refused:
        Counting(fake)
    assert "self._self_calls" in str(refused.value) and isinstance(fake.calls, list)


def test_a_wrapped_clients_attribute_is_set_on_that_client_and_read_through_the_layers() -> None:
    fake = FakeChatClient("x")
    stack = CountingChatClient(RenamingChatClient(fake))
    with pytest.raises(AttributeError, match=r"client.get_service\(FakeChatClient\).model = \.\.\."):
        stack.model = "other"
    stack.get_service(FakeChatClient).model = "other"  # type: ignore[union-attr]
    assert stack.model == "other" and fake.model == "other"


# ------------------------------------------------------------------ proxy contract


def _all_layer_classes() -> list[type[DelegatingChatClient]]:
    for module in pkgutil.iter_modules(so_middleware.middleware.__path__):
        importlib.import_module(f"so_middleware.middleware.{module.name}")
    found: list[type[DelegatingChatClient]] = []
    pending = list(DelegatingChatClient.__subclasses__())
    while pending:
        cls = pending.pop()
        if cls.__module__.startswith("so_middleware."):
            found.append(cls)
        pending.extend(cls.__subclasses__())
    return sorted(found, key=lambda c: c.__qualname__)


LAYERS = [CountingChatClient, RenamingChatClient, *_all_layer_classes()]


@pytest.mark.parametrize("layer_class", LAYERS, ids=lambda c: c.__name__)
async def test_proxy_contract(layer_class: type[DelegatingChatClient]) -> None:
    fake = FakeChatClient("hello")
    before = set(vars(fake))
    layer = layer_class(fake)
    response = await layer.get_response("hi")
    assert isinstance(response, ChatResponse)
    # state stays on the proxy, not on the wrapped client; any other name is refused, not written through
    assert set(vars(fake)) == before
    for name in ("calls", "brand_new"):  # one the wrapped client has, one it has not
        with pytest.raises(AttributeError, match=rf"cannot set '{name}' on the layer {layer_class.__name__}"):
            setattr(layer, name, 0)
    assert set(vars(fake)) == before and fake.calls != 0
    assert all(name.startswith(("_self_", "__")) for name in layer.__self_dict__)
    # type, isinstance, protocol
    assert type(layer) is layer_class
    assert isinstance(layer, FakeChatClient)
    assert isinstance(layer, ChatClient)
    # async with / with return the layer itself, not the inner client
    async with layer as entered:
        assert entered is layer
    with layer as entered_sync:
        assert entered_sync is layer
    # layers are found by get_service, the inner client too
    assert layer.get_service(layer_class) is layer
    assert layer.get_service(FakeChatClient) is fake
    # copy keeps class and configuration over a new inner client
    clone = copy.copy(layer)
    assert type(clone) is layer_class and clone.__wrapped__ is not fake
    assert {k for k in clone.__self_dict__ if k.startswith("_self_")} == {
        k for k in layer.__self_dict__ if k.startswith("_self_")
    }
    # pickling is refused with a clear error
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(layer)
    # streaming passes through too
    stream = layer.get_response("hi", stream=True)
    assert (await stream.get_final_response()).text == "hello"
