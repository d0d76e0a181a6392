"""The provider registry: `as_chat_client` finds adapters the providers registered, not by name."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from so_middleware import UserError, as_chat_client
from so_middleware.core import ENTRY_POINT_GROUP, register_provider
from so_middleware.testing import FakeChatClient


class _SDKClient:
    """Stands for a client class of a third-party SDK whose top-level module is `fakesdk`."""


_SDKClient.__module__ = "fakesdk._client"


class _UserSubclass(_SDKClient):
    """A user's own subclass of the SDK client, defined outside the SDK."""


def test_a_registered_provider_wraps_its_sdk_clients_and_their_subclasses() -> None:
    seen: list[tuple[Any, dict[str, Any]]] = []

    def factory(client: Any, **options: Any) -> Any:
        seen.append((client, options))
        return FakeChatClient("ok")

    register_provider("fakesdk", factory)
    raw = _SDKClient()
    adapter = as_chat_client(raw, model="m")
    assert isinstance(adapter, FakeChatClient)
    sub = _UserSubclass()
    as_chat_client(sub)
    assert seen == [(raw, {"model": "m"}), (sub, {})]


def test_an_unknown_client_is_a_user_error_naming_its_type() -> None:
    class Stranger:
        pass

    with pytest.raises(UserError, match="Stranger"):
        as_chat_client(Stranger())


def test_providers_are_found_through_entry_points_without_being_imported_first() -> None:
    """A raw SDK client is wrapped even when nobody imported its provider package: the core
    loads it from the entry-point group, and the provider registers itself on import."""
    code = (
        "import sys, openai, anthropic, so_middleware\n"
        "assert 'so_middleware.providers.openai' not in sys.modules\n"
        "a = so_middleware.as_chat_client(openai.AsyncOpenAI(api_key='k', base_url='http://127.0.0.1:9'), model='m')\n"
        "b = so_middleware.as_chat_client(anthropic.Anthropic(api_key='k', base_url='http://127.0.0.1:9'), model='m')\n"
        "print(type(a).__name__, type(b).__name__)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["OpenAIChatClient", "AnthropicChatClient"]


def test_the_builtin_providers_are_declared_as_entry_points() -> None:
    from importlib.metadata import entry_points

    declared = {entry_point.name: entry_point.value for entry_point in entry_points(group=ENTRY_POINT_GROUP)}
    assert declared["openai"] == "so_middleware.providers.openai"
    assert declared["anthropic"] == "so_middleware.providers.anthropic"
