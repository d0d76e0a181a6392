"""The Messages route on engines this machine does not have: vLLM and Ollama, found by discovery.

`httpx2.MockTransport` answers the discovery probes with the bodies each engine's version
endpoint documents (vLLM `GET /version`, Ollama `GET /api/version`) and `/v1/messages` with
bodies of the Anthropic wire format that both engines answer in (provider-apis.md §3). What a
server does with a request is scripted from its own source, as cited on each profile: vLLM
turns `output_config.format` into an enforced `response_format` (a schema-shaped answer comes
back), a vLLM from before that change drops the field (prose comes back), Ollama has no
constraint field on this route at all. Both sides are asserted: the body each attempt sent, and
the strategy the run ended with.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest
from pydantic import BaseModel

from so_middleware import IncompleteOutputError, with_structured_output
from so_middleware.anthropic import (
    ANTHROPIC_COMPATIBLE,
    LLAMA_SERVER_MESSAGES,
    OLLAMA_MESSAGES,
    VLLM_MESSAGES,
    AnthropicChatClient,
    ServerInfo,
    reset_discovery,
    server_profile,
)

pytestmark = pytest.mark.anyio

VALID = '{"name": "Ada", "age": 36}'


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    reset_discovery()
    yield
    reset_discovery()


def message(answer: str | dict[str, Any], stop_reason: str = "end_turn") -> dict[str, Any]:
    block = {"type": "text", "text": answer} if isinstance(answer, str) else answer
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [block],
        "stop_reason": "tool_use" if block["type"] == "tool_use" else stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 9},
    }


class Engine:
    """A scripted engine: its discovery probe, and one answer per `/v1/messages` call."""

    def __init__(
        self, probes: dict[str, Any], answers: list[str | dict[str, Any]], *, stop_reason: str = "end_turn"
    ) -> None:
        self.probes, self.answers, self.stop_reason = probes, list(answers), stop_reason
        self.bodies: list[dict[str, Any]] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "GET":
            body = self.probes.get(request.url.path)
            return httpx2.Response(200, json=body) if body is not None else httpx2.Response(404, json={})
        self.bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=message(self.answers.pop(0), self.stop_reason))

    def client(self) -> AnthropicChatClient:
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))
        sdk = anthropic.AsyncAnthropic(api_key="x", base_url="http://engine.internal:8000", http_client=http)
        return AnthropicChatClient(sdk, "m")


VLLM = {"/version": {"version": "0.22.0"}}
OLLAMA = {"/api/version": {"version": "0.14.0"}}


@pytest.mark.parametrize(
    ("info", "profile"),
    [
        (ServerInfo("vllm"), VLLM_MESSAGES),
        (ServerInfo("ollama"), OLLAMA_MESSAGES),
        (ServerInfo("llama.cpp"), LLAMA_SERVER_MESSAGES),
        (ServerInfo("tgi"), ANTHROPIC_COMPATIBLE),
        (ServerInfo("unknown"), ANTHROPIC_COMPATIBLE),
    ],
)
def test_each_engine_gets_its_messages_profile(info: ServerInfo, profile: Any) -> None:
    assert server_profile(info) == profile


def test_a_claude_name_on_ollama_takes_no_prefill() -> None:
    """`ollama cp` can give a local model a Claude name; the name says nothing of the engine, but a
    model named like one that refuses a prefill keeps none."""
    assert server_profile(ServerInfo("ollama"), "claude-opus-4-6") == OLLAMA_MESSAGES.replace(assistant_prefill=False)


async def test_vllm_enforces_output_config_format_so_auto_starts_native() -> None:
    engine = Engine(VLLM, [VALID])
    client = with_structured_output(engine.client())
    response = await client.get_response("Ada, 36", output_type=Person)
    assert response.value == Person(name="Ada", age=36)
    assert [a.strategy for a in response.attempts] == ["native"]
    assert client.capabilities == VLLM_MESSAGES
    sent = engine.bodies[0]
    assert sent["output_config"]["format"]["type"] == "json_schema"
    assert set(sent["output_config"]["format"]["schema"]["properties"]) == {"name", "age"}
    assert "structured_outputs" not in sent and "guided_json" not in sent  # dropped by its request model


def tool_use(name: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_1", "name": name, "input": {"name": "Ada", "age": 36}}


async def test_a_vllm_that_drops_output_config_is_learned_and_asked_by_its_forced_tool() -> None:
    """A vLLM from before `output_config` reached its Messages route: the schema is ignored and
    prose comes back. The run moves on at once (no re-ask spent) to the forced tool, which that
    route's `tool_choice` enforces, keeps the evidence, and the next run starts at the tool."""
    engine = Engine(VLLM, ["Ada is a mathematician who was 36.", tool_use("Person"), tool_use("Person")])
    client = with_structured_output(engine.client())
    response = await client.get_response("Ada, 36", output_type=Person)
    assert response.value == Person(name="Ada", age=36)
    assert [a.strategy for a in response.attempts] == ["native", "tool"]
    assert "output_config" in engine.bodies[0] and "output_config" not in engine.bodies[1]
    assert engine.bodies[1]["tool_choice"] == {"type": "tool", "name": "Person"}
    (lesson,) = client.learned.values()
    assert lesson.ignored == {"native"} and "mathematician" in lesson.evidence["native"]
    again = await client.get_response("Ada, 36", output_type=Person)
    assert [a.strategy for a in again.attempts] == ["tool"]


async def test_ollama_has_no_constraint_on_messages_so_auto_prompts() -> None:
    engine = Engine(OLLAMA, ['"Ada", "age": 36}'])
    client = with_structured_output(engine.client())
    response = await client.get_response("Ada, 36", output_type=Person)
    assert response.value == Person(name="Ada", age=36)
    assert [a.strategy for a in response.attempts] == ["prompted"]
    sent = engine.bodies[0]
    assert not {"output_config", "format", "tools", "tool_choice"} & set(sent)
    assert sent["messages"][-1] == {"role": "assistant", "content": '{"name": "'}  # the JSON prefill


@pytest.mark.parametrize("probes", [VLLM, OLLAMA], ids=["vllm", "ollama"])
async def test_a_loop_on_an_engines_messages_route_ends_typed_with_no_field_it_would_drop(
    probes: dict[str, Any],
) -> None:
    """Neither engine reads a penalty on this route: a looping answer ends the run at once."""
    engine = Engine(probes, ['{"name": "A' + "la" * 200], stop_reason="max_tokens")
    with pytest.raises(IncompleteOutputError, match="looped"):
        await with_structured_output(engine.client()).get_response("Ada, 36", output_type=Person)
    assert len(engine.bodies) == 1
