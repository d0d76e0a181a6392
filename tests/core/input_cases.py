"""Helpers shared by test_input_validation.py and the cases of it that run through the layers
(test_input_validation_through_the_layers.py)."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from pydantic import BaseModel

from so_middleware import (
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
)
from so_middleware.anthropic import AnthropicChatClient
from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient

COMPLETION = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}  # fmt: skip


class Person(BaseModel):
    name: str


class Recorded:
    """An adapter over a real SDK client and the requests its transport received."""

    def __init__(self, adapter: str, **adapter_options: Any) -> None:
        self.requests: list[httpx2.Request] = []
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self.answer))
        if adapter == "messages":
            sdk: Any = anthropic.AsyncAnthropic(api_key="x", base_url="http://mock", http_client=http)
            self.client: Any = AnthropicChatClient(sdk, "m", discover=False, **adapter_options)
        else:
            sdk = openai.AsyncOpenAI(api_key="x", base_url="http://mock/v1", http_client=http)
            self.client = (OpenAIChatClient if adapter == "chat" else OpenAIResponsesClient)(sdk, "m", discover=False)

    def answer(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return httpx2.Response(200, json=COMPLETION)

    def sent_messages(self) -> Any:
        return json.loads(self.requests[-1].content)["messages"]


BLANK = pytest.mark.parametrize(
    "messages",
    [["", "   "], [ChatMessage("user", "  \n")], ["Who is Ada?", " "], [ChatMessage("user")]],
    ids=["all-blank", "blank-message", "one-blank-of-two", "no-contents"],
)


LONE = "\ud83d"  # half of an emoji: not valid Unicode text, no UTF-8 encoding exists


def tool_turn(result: Any) -> list[Any]:
    return [
        "What is the weather?",
        ChatMessage("assistant", [FunctionCallContent("c1", "weather", "{}")]),
        ChatMessage("tool", [FunctionResultContent("c1", result)]),
    ]


SURROGATES = pytest.mark.parametrize(
    ("messages", "options", "where"),
    [
        (f"Hi {LONE}", {}, "message 0 (user)"),
        ([ChatMessage("system", f"Be {LONE}"), "Hi"], {}, "message 0 (system)"),
        (["Hi"], {"instructions": f"Be brief {LONE}"}, "the instructions"),
        (tool_turn(f"sunny {LONE}"), {}, "message 2 (tool)"),
        (tool_turn({"sky": [f"sunny {LONE}"]}), {}, "message 2 (tool)"),
        ([ChatMessage("user", "Hi", author_name=f"ada{LONE}")], {}, "message 0 (user)"),
        ("Hi", {"stop": [f"end{LONE}"]}, "option 'stop'"),
        ("Hi", {"tools": [FunctionTool("f", {"type": "object"}, f"Finds {LONE}")]}, "option 'tools'"),
        ("Hi", {"extra_body": {"user": f"ada{LONE}"}}, "option 'extra_body'"),
    ],
    ids=["user", "system", "instructions", "tool-result", "nested-tool-result", "author-name", "stop", "tool", "extra"],
)
