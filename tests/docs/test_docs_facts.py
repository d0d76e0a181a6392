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


@pytest.mark.parametrize(
    ("kind", "route", "profile"),
    [
        ("vllm", "chat", "VLLM_CHAT"),
        ("ollama", "chat", "OLLAMA_CHAT"),
        ("lmstudio", "chat", "OPENAI_COMPATIBLE"),
        ("llama.cpp", "chat", "LLAMA_SERVER_CHAT"),
        ("llama.cpp", "responses", "LLAMA_SERVER_RESPONSES"),
    ],
)
def test_each_integration_page_names_the_profile_its_server_gets(kind: str, route: str, profile: str) -> None:
    """docs/integrations/*.md: the profile a discovered server gets, and what it enforces."""
    from so_middleware import openai as profiles

    assert profiles.server_profile(profiles.ServerInfo(kind), route) is getattr(profiles, profile)


def test_the_integration_pages_facts_of_the_profiles() -> None:
    """docs/integrations/*.md: what each page says its server enforces natively."""
    from so_middleware import anthropic, openai

    assert openai.OLLAMA_CHAT.native_json_schema and not openai.OLLAMA_CHAT.forced_tool_choice
    assert openai.VLLM_CHAT.native_json_schema and openai.VLLM_CHAT.forced_tool_choice
    assert not openai.VLLM_CHAT.assistant_prefill
    assert openai.OPENAI_COMPATIBLE.forced_tool_choice and not openai.OPENAI_COMPATIBLE.strict_tools
    assert openai.OPENAI_API.strict_tools and not openai.OPENAI_API.assistant_prefill
    assert openai.OPENAI_API_RESPONSES.loop_breaking == () and openai.OPENAI_API.loop_breaking == (
        ("frequency_penalty", 0.5),
    )
    assert openai.LLAMA_SERVER_CHAT.tool_emulation and openai.LLAMA_SERVER_CHAT.prefill_echoed
    assert openai.profile_for("https://x.openai.azure.com/openai/v1") is openai.OPENAI_API
    llama_messages = anthropic.LLAMA_SERVER_MESSAGES
    assert not llama_messages.native_json_schema and not llama_messages.json_object
    assert llama_messages.loop_breaking == (("temperature", 0.8),)
    assert anthropic.ANTHROPIC_API.native_json_schema and not anthropic.ANTHROPIC_API.json_object
    assert not anthropic.OLLAMA_MESSAGES.native_json_schema and anthropic.VLLM_MESSAGES.native_json_schema
