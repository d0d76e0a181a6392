"""Bad input is a `UserError` naming the problem, raised before any HTTP request.

Each adapter sits on a real SDK client whose transport records every request
(`httpx2.MockTransport`); every refusal below is checked to have sent nothing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from input_cases import BLANK, LONE, SURROGATES, Person, Recorded

from so_middleware import (
    ChatMessage,
    FunctionTool,
    TextContent,
    UserError,
)

pytestmark = pytest.mark.anyio

ADAPTERS = pytest.mark.parametrize("adapter", ["chat", "responses", "messages"])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def refused(recorded: Recorded, messages: Any, *, match: str, **kwargs: Any) -> UserError:
    with pytest.raises(UserError, match=match) as caught:
        await recorded.client.get_response(messages, **kwargs)
    with pytest.raises(UserError, match=match):
        recorded.client.get_response(messages, stream=True, **kwargs)
    assert recorded.requests == []
    return caught.value


# ------------------------------------------------------------ messages


async def test_an_openai_style_dict_is_one_message() -> None:
    recorded = Recorded("chat")
    await recorded.client.get_response({"role": "user", "content": "hi"})
    assert recorded.sent_messages() == [{"role": "user", "content": "hi"}]
    await recorded.client.get_response([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}])
    assert recorded.sent_messages() == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]


async def test_a_conversation_mixes_dicts_chat_messages_and_strings() -> None:
    """The conversation of docs/how-to/conversations.md: each form is one message, in order; `instructions` comes first."""
    recorded = Recorded("chat")
    conversation = [
        {"role": "system", "content": "Extract the person."},
        {"role": "user", "content": "Who wrote the first program?"},
        ChatMessage("assistant", "Ada Lovelace."),
        "She died at 36.",
    ]
    await recorded.client.get_response(conversation, options={"instructions": "Be brief."})
    assert recorded.sent_messages() == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "Extract the person."},
        {"role": "user", "content": "Who wrote the first program?"},
        {"role": "assistant", "content": "Ada Lovelace."},
        {"role": "user", "content": "She died at 36."},
    ]


@pytest.mark.parametrize(
    "message",
    [{"content": "hi"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]}, {"role": "user", "text": "hi"}],
    ids=["no-role", "content-parts", "unknown-key"],
)
async def test_other_message_dicts_are_refused_clearly(message: dict[str, Any]) -> None:
    await refused(Recorded("chat"), message, match="a message dict must be")


@pytest.mark.parametrize("messages", [None, [], "", "   "], ids=["none", "empty-list", "empty-str", "blank-str"])
@ADAPTERS
async def test_no_messages_is_refused(adapter: str, messages: Any) -> None:
    await refused(Recorded(adapter), messages, match="no messages to send")


@BLANK
@ADAPTERS
async def test_a_blank_user_message_in_a_list_is_refused(adapter: str, messages: Any) -> None:
    """Before: a list holding a blank user message was sent (only a blank str was refused)."""
    await refused(Recorded(adapter), messages, match=r"no messages to send|message \d \(user\) is blank")


@SURROGATES
@ADAPTERS
async def test_a_lone_surrogate_in_the_input_is_refused_before_the_call(
    adapter: str, messages: Any, options: Any, where: str
) -> None:
    """Before: the SDK raised UnicodeEncodeError while writing the request body."""
    error = await refused(Recorded(adapter), messages, options=options, match="lone UTF-16 surrogate")
    assert str(error).startswith(where) and "\\ud83d" in str(error)
    str(error).encode()  # the message itself is valid text


async def test_a_models_answer_with_a_lone_surrogate_is_sent_back_mended_not_refused() -> None:
    """The model wrote it (its answer, now in the conversation's history): the caller cannot fix it,
    so the next turn sends it with U+FFFD in place of the surrogate. The caller's own messages are
    never changed."""
    recorded = Recorded("chat")
    answer = ChatMessage("assistant", f"Here you go {LONE}")
    history = ["Give me an emoji.", answer, "Thanks. Another?"]
    await recorded.client.get_response(history)
    assert recorded.sent_messages()[1]["content"] == "Here you go \ufffd"
    assert answer.text == f"Here you go {LONE}"


@pytest.mark.parametrize(
    "make",
    [lambda: ChatMessage("user", 5), lambda: ChatMessage("user", [TextContent("a"), 5]), lambda: TextContent(5)],  # type: ignore[arg-type, list-item]
    ids=["int-contents", "int-in-list", "text-content-int"],
)
def test_contents_that_are_not_contents_are_refused_not_dropped(make: Any) -> None:
    with pytest.raises(UserError, match=r"TextContent|content objects|contents must be"):
        make()


# ------------------------------------------------------------ options


BAD_OPTIONS = [
    ({"stop": 5}, "'stop'"),
    ({"tools": 5}, "'tools'"),
    ({"tools": ["not a tool"]}, "'tools'"),
    ({"extra_body": 5}, "'extra_body'"),
    ({"additional_properties": 5}, "'additional_properties'"),
    ({"model": 123}, "'model'"),
    ({"temperature": "hot"}, "'temperature'"),
    ({"temperature": float("nan")}, "'temperature'"),
    ({"seed": "x"}, "'seed'"),
    ({"max_tokens": -5}, "'max_tokens'"),
    ({"max_tokens": "5"}, "'max_tokens'"),
    ({"top_p": 2}, "'top_p'"),
    ({"instructions": ["a"]}, "'instructions'"),
    ({"idle_timeout": -1}, "'idle_timeout'"),
]


@ADAPTERS
@pytest.mark.parametrize(
    ("options", "named"), BAD_OPTIONS, ids=[next(iter(o)) + str(i) for i, (o, _) in enumerate(BAD_OPTIONS)]
)
async def test_an_option_of_the_wrong_type_is_a_user_error_naming_it(adapter: str, options: Any, named: str) -> None:
    error = await refused(Recorded(adapter), "hi", match=named, options=options)
    assert "must be" in str(error)


async def test_the_caller_options_dict_is_not_changed_by_validation() -> None:
    options = {"temperature": 0.5, "stop": "END"}
    recorded = Recorded("chat")
    await recorded.client.get_response("hi", options=options)
    assert options == {"temperature": 0.5, "stop": "END"}
    assert json.loads(recorded.requests[0].content)["stop"] == ["END"]


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"name": 5}, "name"),
        ({"parameters": 5}, "parameters"),
        ({"description": 5}, "description"),
        ({"strict": "yes"}, "strict"),
    ],
)
def test_a_function_tool_of_the_wrong_type_is_refused(fields: dict[str, Any], named: str) -> None:
    values = {"name": "lookup", "parameters": {"type": "object"}, **fields}
    with pytest.raises(UserError, match=named):
        FunctionTool(**values)


@pytest.mark.parametrize("max_tokens", ["5", 0, -1, 2.5, True])
def test_anthropic_max_tokens_of_the_wrong_type_is_a_user_error(max_tokens: Any) -> None:
    with pytest.raises(UserError, match="max_tokens must be an int >= 1"):
        Recorded("messages", max_tokens=max_tokens)


async def test_a_class_as_response_format_says_to_pass_output_type() -> None:
    await refused(Recorded("chat"), "hi", match="pass output_type=Person", options={"response_format": Person})


# ------------------------------------------------------------ with_retries
