"""Which adapter wraps a raw SDK client: a registry the core owns and the providers fill.

The core knows no provider by name. A provider package registers its adapter factory under the
top-level module of its SDK when it is imported (`so_middleware.openai` registers `"openai"`),
and names itself in the `so_middleware.providers` entry-point group, so `as_chat_client` can
load it the first time it meets a client of that SDK. A third-party package adds a provider the
same way.

Example:
    register_provider("mysdk", lambda client, **options: MyChatClient(client, **options))
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

__all__ = ["ENTRY_POINT_GROUP", "AdapterFactory", "adapter_factory", "register_provider"]

ENTRY_POINT_GROUP = "so_middleware.providers"

AdapterFactory = Callable[..., Any]
"""`factory(sdk_client, **adapter_options)` returns the `ChatClient` adapter over `sdk_client`."""

_factories: dict[str, AdapterFactory] = {}
_searched: set[str] = set()


def register_provider(sdk_module: str, factory: AdapterFactory) -> None:
    """Let `as_chat_client` wrap clients whose class comes from the top-level module `sdk_module`."""
    _factories[sdk_module] = factory


def adapter_factory(client: object) -> AdapterFactory | None:
    """The factory registered for `client`'s SDK (its class or a base class), loading providers
    named in the entry-point group on first need; None when no provider knows the client."""
    for cls in type(client).__mro__:
        sdk_module = cls.__module__.split(".")[0]
        if sdk_module not in _factories and sdk_module not in _searched:
            _searched.add(sdk_module)
            for entry_point in entry_points(group=ENTRY_POINT_GROUP, name=sdk_module):
                entry_point.load()  # importing the provider registers it
        if sdk_module in _factories:
            return _factories[sdk_module]
    return None
