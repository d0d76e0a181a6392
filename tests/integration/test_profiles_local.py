"""Each llama-server capability flag, re-checked against the real server on its route.

Nothing here is copied from the profiles: every flag is observed, then compared with the profile.
The probes make "ignored" obvious for a 135M model at temperature 0: the schema requires a key
(`zebra_count`) the model never writes on its own for "What is 2 + 4?"; tools are seen to reach
the model by the prompt growing (it does not: the prompt is token for token the same); a forced
tool choice by a tool call coming back; a prefill by the answer continuing it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from so_middleware import Capabilities, ChatMessage, ChatOptions, ForcedTool, FunctionTool, ResponseFormat
from so_middleware.anthropic import LLAMA_SERVER_MESSAGES, AnthropicChatClient
from so_middleware.local import LocalModelServer
from so_middleware.openai import LLAMA_SERVER_CHAT, LLAMA_SERVER_RESPONSES, OpenAIChatClient, OpenAIResponsesClient
from so_middleware.wire.chat import response_format_to_wire
from so_middleware.wire.messages import output_format_to_wire
from so_middleware.wire.responses import text_format_to_wire

pytestmark = pytest.mark.anyio

ZEBRA = {"type": "object", "properties": {"zebra_count": {"type": "integer"}}, "required": ["zebra_count"]}
ZEBRA_FORMAT = ResponseFormat.json_schema(ZEBRA, name="Zebras")
QUESTION = "What is 2 + 4?"
PREFILL = '{"name": "'
PERSON = "John Smith is 35. Give JSON."
WEATHER = FunctionTool(
    "get_weather",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "Weather in a city",
)
GREEDY = {"temperature": 0, "seed": 1}


def conforms(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and isinstance(value.get("zebra_count"), int)


def is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def prefill_flags(raw_text: str) -> dict[str, bool]:
    """From the raw answer to [user PERSON, assistant PREFILL]: was the prefill continued, echoed?"""
    echoed = raw_text.startswith(PREFILL)
    continuation = raw_text[len(PREFILL) :] if echoed else raw_text
    return {"assistant_prefill": continuation.startswith("John"), "prefill_echoed": echoed}


def matches(profile: Capabilities, observed: dict[str, bool]) -> None:
    if not observed["tools"]:
        observed["strict_tools"] = False  # nothing to be strict about when tools never reach the model
    assert observed == {flag: getattr(profile, flag) for flag in observed}, f"{profile.name} differs from the server"


async def test_chat_route(local_server: LocalModelServer, local_sdk: Any) -> None:
    sdk = local_sdk("async-openai")
    client = OpenAIChatClient(sdk, local_server.model, capabilities=LLAMA_SERVER_CHAT)
    schema = await client.get_response(QUESTION, options={"response_format": ZEBRA_FORMAT, "max_tokens": 30, **GREEDY})
    json_mode = await client.get_response(
        "Name a city.", options={"response_format": {"type": "json_object"}, "max_tokens": 20, **GREEDY}
    )
    # the backend itself, not the adapter's emulation of a required call (tests/providers/openai/test_tool_emulation.py)
    as_sent = OpenAIChatClient(sdk, local_server.model, capabilities=LLAMA_SERVER_CHAT.replace(tool_emulation=False))
    forced = await as_sent.get_response(
        "What is the weather in Oslo?",
        options={"tools": [WEATHER], "tool_choice": ForcedTool("get_weather"), "max_tokens": 16, **GREEDY},
    )
    bare = await client.get_response("What is the weather in Oslo?", options={"max_tokens": 1, **GREEDY})
    prefilled = await sdk.chat.completions.create(
        model=local_server.model,
        max_tokens=8,
        temperature=0,
        messages=[{"role": "user", "content": PERSON}, {"role": "assistant", "content": PREFILL}],
    )
    assert forced.usage is not None and bare.usage is not None
    tools_reach_model = forced.usage.input_tokens != bare.usage.input_tokens
    matches(
        LLAMA_SERVER_CHAT,
        {
            "native_json_schema": conforms(schema.text),
            "json_object": is_json_object(json_mode.text),
            "tools": tools_reach_model,
            "forced_tool_choice": bool(forced.messages[-1].function_calls),
            **prefill_flags(prefilled.choices[0].message.content or ""),
        },
    )


async def test_responses_route(local_server: LocalModelServer, local_sdk: Any) -> None:
    sdk = local_sdk("async-openai")
    model = local_server.model
    text_format_alone = await sdk.responses.create(
        model=model,
        input=QUESTION,
        max_output_tokens=30,
        temperature=0,
        text={"format": text_format_to_wire(ZEBRA_FORMAT)},
    )
    passthrough_alone = await sdk.responses.create(
        model=model,
        input=QUESTION,
        max_output_tokens=30,
        temperature=0,
        extra_body={"response_format": response_format_to_wire(ZEBRA_FORMAT)},
    )
    assert not conforms(text_format_alone.output_text)  # seed 004, live: text.format alone is ignored
    assert conforms(passthrough_alone.output_text)
    client = OpenAIResponsesClient(sdk, model, capabilities=LLAMA_SERVER_RESPONSES)
    schema = await client.get_response(
        QUESTION, options={"response_format": ZEBRA_FORMAT, "max_tokens": 30, "temperature": 0}
    )
    json_mode = await client.get_response(
        "Name a city.", options={"response_format": {"type": "json_object"}, "max_tokens": 20, "temperature": 0}
    )
    forced = await client.get_response(
        "What is the weather in Oslo?",
        options={"tools": [WEATHER], "tool_choice": ForcedTool("get_weather"), "max_tokens": 16, "temperature": 0},
    )
    bare = await client.get_response("What is the weather in Oslo?", options={"max_tokens": 1, "temperature": 0})
    prefilled = await sdk.responses.create(
        model=model,
        max_output_tokens=8,
        temperature=0,
        input=[
            {"type": "message", "role": "user", "content": PERSON},
            {"type": "message", "role": "assistant", "content": PREFILL},
        ],
    )
    assert forced.usage is not None and bare.usage is not None
    tools_reach_model = forced.usage.input_tokens != bare.usage.input_tokens
    matches(
        LLAMA_SERVER_RESPONSES,
        {
            "response_format_passthrough": not conforms(text_format_alone.output_text)
            and conforms(passthrough_alone.output_text),
            "native_json_schema": conforms(schema.text),  # what the adapter sends, end to end
            "json_object": is_json_object(json_mode.text),
            "tools": tools_reach_model,
            "forced_tool_choice": bool(forced.messages[-1].function_calls),
            **prefill_flags(prefilled.output_text),
        },
    )


async def test_messages_route(local_server: LocalModelServer, local_sdk: Any) -> None:
    sdk = local_sdk("async-anthropic")
    model = local_server.model
    user = [{"role": "user", "content": QUESTION}]
    output_config = await sdk.messages.create(
        model=model,
        max_tokens=30,
        messages=user,
        output_config={"format": output_format_to_wire(ZEBRA_FORMAT)},
        extra_body={"temperature": 0},
    )
    tool = {"name": WEATHER.name, "description": WEATHER.description, "input_schema": dict(WEATHER.parameters)}
    weather = [{"role": "user", "content": "What is the weather in Oslo?"}]
    forced = await sdk.messages.create(
        model=model,
        max_tokens=16,
        messages=weather,
        tools=[tool],
        tool_choice={"type": "tool", "name": WEATHER.name},
        extra_body={"temperature": 0},
    )
    bare = await sdk.messages.create(model=model, max_tokens=1, messages=weather, extra_body={"temperature": 0})
    prefilled = await sdk.messages.create(
        model=model,
        max_tokens=8,
        extra_body={"temperature": 0},
        messages=[{"role": "user", "content": PERSON}, {"role": "assistant", "content": PREFILL}],
    )

    def prompt_size(message: Any) -> int:
        return int(message.usage.input_tokens + (message.usage.cache_read_input_tokens or 0))

    tools_reach_model = prompt_size(forced) != prompt_size(bare)
    matches(
        LLAMA_SERVER_MESSAGES,
        {
            "native_json_schema": conforms(output_config.content[0].text),
            "tools": tools_reach_model,
            "forced_tool_choice": any(block.type == "tool_use" for block in forced.content),
            **prefill_flags(prefilled.content[0].text),
        },
    )
    # No JSON mode on this protocol: the adapter sends nothing for it and says so.
    assert LLAMA_SERVER_MESSAGES.json_object is False
    adapter = AnthropicChatClient(sdk, model, capabilities=LLAMA_SERVER_MESSAGES)
    with pytest.warns(UserWarning, match="no Anthropic form"):
        request = adapter.request_for(
            [ChatMessage("user", "x")], ChatOptions.coerce({"response_format": {"type": "json_object"}})
        )
    assert "output_config" not in request


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_engine_constraints_reach_chat_but_not_messages(
    local_server: LocalModelServer, local_sdk: Any, stream: bool
) -> None:
    """llama-server's own body fields, `json_schema` and `grammar`, constrain the Chat route and
    are ignored on /v1/messages: no engine strategy can stand in for the missing format there,
    so the Messages profile keeps `prompted` only (bench/route_constraints.py measures all routes)."""
    grammar = 'root ::= "{\\"zebra_count\\": " [0-9] "}"'
    engine_fields = ({"json_schema": ZEBRA}, {"grammar": grammar})
    chat, messages = local_sdk("async-openai"), local_sdk("async-anthropic")
    user = [{"role": "user", "content": QUESTION}]
    for extra in engine_fields:
        on_chat = await chat.chat.completions.create(
            model=local_server.model, messages=user, max_tokens=30, stream=stream, extra_body={**extra, **GREEDY}
        )
        on_messages = await messages.messages.create(
            model=local_server.model,
            max_tokens=30,
            messages=user,
            stream=stream,
            extra_body={**extra, "temperature": 0},
        )
        if stream:
            chat_text = "".join([c.choices[0].delta.content or "" async for c in on_chat if c.choices])
            messages_text = "".join(
                [
                    e.delta.text
                    async for e in on_messages
                    if e.type == "content_block_delta" and e.delta.type == "text_delta"
                ]
            )
        else:
            chat_text, messages_text = on_chat.choices[0].message.content or "", on_messages.content[0].text
        assert conforms(chat_text), (extra, chat_text)
        assert not conforms(messages_text), (extra, messages_text)
    assert not LLAMA_SERVER_MESSAGES.native_json_schema and not LLAMA_SERVER_MESSAGES.tools
