"""What the docs site says that no other test covers, each checked (the docs' own blocks check the rest)."""

from __future__ import annotations

import sys
import typing

import pytest
import typing_extensions
from pydantic import BaseModel

from so_middleware import UserError, with_structured_output
from so_middleware.testing import FakeChatClient


class Person(BaseModel):
    name: str
    age: int


class ExtensionsCity(typing_extensions.TypedDict):
    name: str
    country: str


class TypingCity(typing.TypedDict):
    name: str
    country: str


class TypingNode(typing.TypedDict):
    name: str
    children: list[TypingNode]


def test_a_typing_extensions_typeddict_value_is_a_plain_dict() -> None:
    """docs/how-to/types.md, "TypedDicts"."""
    fake = FakeChatClient('{"name": "Leeds", "country": "England"}')
    response = with_structured_output(fake).get_response_sync("Leeds is in England.", output_type=ExtensionsCity)
    assert type(response.value) is dict and response.value == {"name": "Leeds", "country": "England"}


def test_a_typing_typeddict_works_on_every_python() -> None:
    """docs/how-to/types.md, "TypedDicts" (before: a UserError on Python < 3.12)."""
    fake = FakeChatClient('{"name": "Leeds", "country": "England"}')
    response = with_structured_output(fake).get_response_sync("Leeds is in England.", output_type=TypingCity)
    assert type(response.value) is dict and response.value == {"name": "Leeds", "country": "England"}


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="pydantic takes typing.TypedDict from Python 3.12 on")
def test_a_self_referencing_typing_typeddict_before_python_3_12_is_a_user_error_before_any_call() -> None:
    """docs/how-to/types.md, "TypedDicts"."""
    fake = FakeChatClient('{"name": "a", "children": []}')
    with pytest.raises(UserError, match=r"typing_extensions\.TypedDict"):
        with_structured_output(fake).get_response_sync("A tree.", output_type=TypingNode)
    assert fake.calls == []


def test_a_partial_model_holds_none_for_fields_not_streamed_and_dumps_without_warnings() -> None:
    """docs/how-to/streaming.md and sync-and-web-apps.md: `partial_value` of a model has None in the
    fields not streamed yet, and `model_dump(mode="json", warnings=False)` sends it on (pytest turns
    any warning into an error here)."""
    fake = FakeChatClient('{"name": "Ada Lovelace", "age": 36}')
    dumped = []
    with with_structured_output(fake).get_response_sync("Ada", output_type=Person, stream=True) as stream:
        for update in stream:
            if update.partial_value is not None:
                dumped.append(update.partial_value.model_dump(mode="json", warnings=False))
    assert {"name": "Ada Lovelace", "age": None} in dumped
    assert dumped[-1] == {"name": "Ada Lovelace", "age": 36}


def test_the_fake_clients_default_profile_gets_the_native_strategy() -> None:
    """docs/how-to/testing.md: by default structured output over a FakeChatClient uses `native`."""
    response = with_structured_output(FakeChatClient('{"name": "Ada", "age": 36}')).get_response_sync(
        "Ada, 36", output_type=Person
    )
    assert [attempt.strategy for attempt in response.attempts] == ["native"]
    assert response.attempts[0].strict is True


def test_adapter_options_are_refused_for_a_client_that_is_already_a_chat_client() -> None:
    """docs/reference (`with_structured_output`'s `**adapter_options`), before any call."""
    fake = FakeChatClient('{"name": "Ada", "age": 36}')
    with pytest.raises(UserError, match=r"adapter options \['model'\] do not apply"):
        with_structured_output(fake, model="gpt-4o-mini")
    assert fake.calls == []
