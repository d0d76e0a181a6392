"""ChatAgent, AgentThread, agent decorators and StructuredOutputAgent (seeds 000, 001, 003)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from so_middleware import FinishReason, ReasoningContent, TextContent, UserError
from so_middleware.agents import AgentResponse, AgentThread, ChatAgent, DelegatingAgent, StructuredOutputAgent
from so_middleware.middleware.structured_output import StructuredOutput, with_structured_output
from so_middleware.testing import FakeChatClient, Reply

pytestmark = pytest.mark.anyio


class Person(BaseModel):
    name: str
    age: int


async def run(agent: Any, stream: bool, *args: Any, **kwargs: Any) -> AgentResponse[Any]:
    if stream:
        return await agent.run(*args, stream=True, **kwargs).get_final_response()  # type: ignore[no-any-return]
    return await agent.run(*args, **kwargs)  # type: ignore[no-any-return]


@pytest.mark.parametrize("stream", [False, True])
async def test_typed_run_keeps_primary_and_secondary_apart(stream: bool) -> None:
    fake = FakeChatClient([Reply('{"name": "Ada"}'), Reply('{"name": "Ada", "age": 36}')])
    agent = ChatAgent(with_structured_output(fake), name="extractor", instructions="Extract the person.")
    response = await run(agent, stream, "Ada Lovelace, 36", output_type=Person)
    assert response.value == Person(name="Ada", age=36)
    assert response.text == '{"name": "Ada", "age": 36}'
    assert [m.role for m in response.messages] == ["assistant"]  # primary: the final answer only
    assert len(response.secondary.attempts) == 2 and response.secondary.attempts[0].error is not None
    assert response.usage is not None and response.usage.total_tokens == 30
    assert fake.calls[0].options.instructions and fake.calls[0].options.instructions.startswith("Extract the person.")


async def test_reasoning_is_secondary_output() -> None:
    from so_middleware import ChatMessage, ChatResponse

    class Thinking(FakeChatClient):
        async def _respond(self, messages: Any, options: Any) -> Any:
            await super()._respond(messages, options)
            return ChatResponse(
                ChatMessage("assistant", [ReasoningContent("hmm"), TextContent("42")]), finish_reason=FinishReason.STOP
            )

    response = await ChatAgent(Thinking("")).run("question")
    assert response.text == "42"
    assert [r.text for r in response.secondary.reasoning] == ["hmm"]


@pytest.mark.parametrize("stream", [False, True])
async def test_thread_carries_the_conversation(stream: bool) -> None:
    fake = FakeChatClient(["Hi Ada.", "You are Ada."])
    agent = ChatAgent(fake)
    thread = AgentThread()
    await run(agent, stream, "I am Ada.", thread=thread)
    await run(agent, stream, "Who am I?", thread=thread)
    assert [m.text for m in fake.calls[1].messages] == ["I am Ada.", "Hi Ada.", "Who am I?"]
    assert len(thread) == 4


async def test_streaming_updates_carry_partial_values() -> None:
    fake = FakeChatClient(Reply('{"name": "Ada Lovelace", "age": 36}', chunk_size=4))
    agent = ChatAgent(with_structured_output(fake))
    stream = agent.run("x", stream=True, output_type=Person)
    names = [u.partial_value.name async for u in stream if u.partial_value is not None and u.partial_value.name]
    assert names[-1] == "Ada Lovelace" and len(set(names)) > 1
    assert (await stream.get_final_response()).value.age == 36


class Recording(DelegatingAgent):
    """An agent decorator that knows nothing of output types."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self._self_runs = 0

    def run(self, input: Any = None, **kwargs: Any) -> Any:
        self._self_runs += 1
        return super().run(input, **kwargs)


async def test_decorated_agent_keeps_typed_runs_working() -> None:
    fake = FakeChatClient('{"response": [2, 3, 5]}')
    agent = Recording(ChatAgent(with_structured_output(fake), name="primes"))
    response = await agent.run("three primes", output_type=list[int])
    assert response.value == [2, 3, 5]
    assert agent._self_runs == 1 and agent.name == "primes"  # attributes pass through


def test_run_sync() -> None:
    assert ChatAgent(FakeChatClient("hello")).run_sync("hi").text == "hello"


def test_run_sync_does_not_stream() -> None:
    """`run_sync(stream=True)`, which the type checkers refuse, raises a `UserError` saying so
    before the model is called; `stream=False` runs."""
    fake = FakeChatClient("hello")
    with pytest.raises(UserError, match=r"run_sync\(\) does not stream"):
        ChatAgent(fake).run_sync("hi", stream=True)  # type: ignore[call-overload]
    assert fake.calls == []
    assert ChatAgent(fake).run_sync("hi", stream=False).text == "hello"


def test_nothing_to_run_is_an_error() -> None:
    with pytest.raises(UserError, match="nothing to run"):
        ChatAgent(FakeChatClient("x")).run(None)


class PlainAgent:
    """An agent that can only answer in text (like an A2A agent)."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.received: list[Any] = []

    async def run(
        self, input: Any = None, *, thread: Any = None, options: Any = None, stream: bool = False
    ) -> AgentResponse[Any]:
        self.received.append(options)
        return await ChatAgent(FakeChatClient(self.answer)).run(input)


async def test_a_decorator_passes_on_only_the_arguments_given() -> None:
    """`DelegatingAgent` has the typed `run`, and hands an inner agent whose `run` takes fewer
    arguments (no `output_type`, no `continuation_token`) only those given."""
    inner = PlainAgent("hello")
    agent = DelegatingAgent(inner)
    assert (await agent.run("hi", options={"temperature": 0.5})).text == "hello"
    assert inner.received == [{"temperature": 0.5}]


def test_a_decorator_runs_in_sync() -> None:
    assert DelegatingAgent(ChatAgent(FakeChatClient("in sync"))).run_sync("hi").text == "in sync"


@pytest.mark.parametrize("stream", [False, True])
async def test_structured_output_agent_converts_text_answers(stream: bool) -> None:
    inner = PlainAgent("John Smith is a 35-year-old engineer.")
    converter = FakeChatClient('{"name": "John Smith", "age": 35}')
    agent = StructuredOutputAgent(inner, converter)
    response = await run(agent, stream, "Tell me about John", output_type=Person)
    assert response.value == Person(name="John Smith", age=35)
    assert response.inner_response.text == "John Smith is a 35-year-old engineer."  # type: ignore[attr-defined]
    assert converter.calls[0].messages[-1].text == "John Smith is a 35-year-old engineer."
    assert converter.calls[0].options.response_format is not None


async def test_structured_output_agent_fills_a_feature_handed_down() -> None:
    inner = PlainAgent("Ada is 36.")
    agent = StructuredOutputAgent(inner, FakeChatClient('{"name": "Ada", "age": 36}'))
    feature = StructuredOutput(Person)
    await agent.run("who?", options={"features": [feature]})
    assert feature.response is not None and feature.response.value == Person(name="Ada", age=36)
    assert not any(isinstance(f, StructuredOutput) for f in inner.received[0].features)


def test_structured_output_agent_needs_an_agent() -> None:
    with pytest.raises(UserError, match="run"):
        StructuredOutputAgent(object(), FakeChatClient("x"))
