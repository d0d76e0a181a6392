# pyright: strict
"""User code that must type-check with `mypy --strict` and pyright (checked by tests/test_typing.py).

`output_type=Person` carries `Person` to `.value` through every entry point: each layer's
`get_response` (awaited, streamed, blocking), `chain(...)`, `ChatAgent.run`/`run_sync`,
`StructuredOutput[T].response` and `.parse(T)`; a type given at creation,
`with_structured_output(client, Person)`, carries it to calls without `output_type`. A type form
that is not a class (`Person | None`, `Annotated[int, ...]`) keeps its type on a call; without
`output_type` the value stays `Any`.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Annotated, Any, Optional, TypedDict

from pydantic import BaseModel
from typing_extensions import assert_type

from so_middleware import (
    ChatAgent,
    ChatResponse,
    ChatResponseUpdate,
    DelegatingChatClient,
    Grammar,
    Regex,
    ResponseStream,
    StructuredOutput,
    StructuredOutputChatClient,
    chain,
    with_cache,
    with_fallback,
    with_limits,
    with_logging,
    with_options,
    with_retries,
    with_structured_output,
    with_telemetry,
)
from so_middleware.agents import AgentResponse, AgentResponseUpdate, StructuredOutputAgent
from so_middleware.core import SyncResponseStream
from so_middleware.local import with_context_size_errors
from so_middleware.testing import FakeChatClient


class Person(BaseModel):
    name: str
    age: int


class Row(TypedDict):
    city: str


class Shouting(DelegatingChatClient):
    """A layer written by the user: it inherits the typed `get_response`."""


async def layered() -> None:
    client = with_telemetry(with_retries(with_structured_output(FakeChatClient("x"))))
    response = await client.get_response("hi", output_type=Person)
    assert_type(response, ChatResponse[Person])
    assert_type(response.value, Person)
    stream = client.get_response("hi", stream=True, output_type=Person)
    assert_type(stream, ResponseStream[ChatResponseUpdate[Person], ChatResponse[Person]])
    async for update in stream:
        assert_type(update.partial_value, Optional[Person])
        print(update.text, update.attempt)
    final = await stream.get_final_response()
    assert_type(final.value, Person)
    print(final.text, final.usage, response.attempts)


async def every_layer() -> None:
    inner = with_structured_output(FakeChatClient("x"))
    assert_type((await inner.get_response("hi", output_type=Person)).value, Person)
    assert_type((await with_telemetry(inner).get_response("hi", output_type=Person)).value, Person)
    assert_type((await with_retries(inner).get_response("hi", output_type=Person)).value, Person)
    assert_type((await with_cache(inner).get_response("hi", output_type=Person)).value, Person)
    assert_type((await with_limits(inner).get_response("hi", output_type=Person)).value, Person)
    assert_type((await with_logging(inner).get_response("hi", output_type=Person)).value, Person)
    assert_type((await with_options(inner, temperature=0).get_response("hi", output_type=Person)).value, Person)
    assert_type((await with_fallback(inner, inner).get_response("hi", output_type=Person)).value, Person)
    assert_type((await with_context_size_errors(inner).get_response("hi", output_type=Person)).value, Person)
    assert_type((await Shouting(inner).get_response("hi", output_type=Person)).value, Person)
    assert_type((await FakeChatClient("x").get_response("hi", output_type=Person)).value, Person)
    chained = chain(FakeChatClient("x"), with_telemetry, with_retries, with_structured_output)
    assert_type((await chained.get_response("hi", output_type=Person)).value, Person)
    chained_stream = chained.get_response("hi", stream=True, output_type=Person)
    assert_type((await chained_stream.get_final_response()).value, Person)


async def creation_time_type() -> None:
    """`with_structured_output(client, Person)`: calls without `output_type` answer a `Person`."""
    client = with_structured_output(FakeChatClient("x"), Person, max_retries=1)
    assert_type(client, StructuredOutputChatClient[Person])
    assert_type((await client.get_response("hi")).value, Person)
    assert_type((await client.get_response("hi", output_type=Row)).value, Row)  # a run's own type wins
    assert_type((await client.get_response("hi", stream=True).get_final_response()).value, Person)
    async for update in client.get_response("hi", stream=True):
        assert_type(update.partial_value, Optional[Person])
    assert_type(client.get_response_sync("hi").value, Person)
    assert_type(client.get_response_sync("hi", stream=True).get_final_response().value, Person)
    assert_type(with_structured_output(FakeChatClient("x"), list[Person]), StructuredOutputChatClient[list[Person]])
    untyped = with_structured_output(FakeChatClient("x"))
    assert_type(untyped, StructuredOutputChatClient[Any])
    assert_type((await untyped.get_response("hi")).value, Any)
    schema_only = with_structured_output(FakeChatClient("x"), schema={"type": "object"})
    assert_type((await schema_only.get_response("hi")).value, Any)
    assert_type((await with_structured_output(FakeChatClient("x"), Person | None).get_response("hi")).value, Any)


async def other_types() -> None:
    client = with_structured_output(FakeChatClient("x"))
    assert_type((await client.get_response("hi", output_type=str)).value, str)
    assert_type((await client.get_response("hi", output_type=list[Person])).value, list[Person])
    assert_type((await client.get_response("hi", output_type=dict[str, int])).value, dict[str, int])
    assert_type((await client.get_response("hi", output_type=Row)).value, Row)
    # type forms that are not classes keep their type too (a `TypeForm`, in both checkers)
    assert_type((await client.get_response("hi", output_type=Person | None)).value, Optional[Person])
    assert_type((await client.get_response("hi", output_type=Optional[Person])).value, Optional[Person])
    assert_type((await client.get_response("hi", output_type=Annotated[int, "age"])).value, int)
    assert_type(client.get_response_sync("hi", output_type=Person | None).value, Optional[Person])
    assert_type((await ChatAgent(client).run("hi", output_type=Person | None)).value, Optional[Person])
    assert_type((await client.get_response("hi")).value, Any)
    untyped: Awaitable[ChatResponse[Any]] = client.get_response("hi", output_type=None)
    assert_type(client.get_response("hi", stream=True), ResponseStream[ChatResponseUpdate[Any], ChatResponse[Any]])
    print(await untyped)


async def text_formats() -> None:
    """`Regex(...)` and `Grammar(...)` are typed `type[str]`: the value is a `str`."""
    client = with_structured_output(FakeChatClient("ABC-1234"))
    code = Regex(r"[A-Z]{3}-[0-9]{4}")
    assert_type(await client.get_response("hi", output_type=code), ChatResponse[str])
    assert_type((await client.get_response("hi", output_type=Grammar(gbnf='root ::= "a"'))).value, str)
    stream = client.get_response("hi", stream=True, output_type=Grammar(lark='start: "a"'))
    assert_type(stream, ResponseStream[ChatResponseUpdate[str], ChatResponse[str]])
    async for update in stream:
        assert_type(update.partial_value, Optional[str])
    assert_type(client.get_response_sync("hi", output_type=code).value, str)
    assert_type(StructuredOutput(code).response, Optional[ChatResponse[str]])
    assert_type((await ChatAgent(client).run("hi", output_type=code)).value, str)


async def agent() -> None:
    agent = ChatAgent(with_structured_output(FakeChatClient("x")))
    result = await agent.run("hi", output_type=Person)
    assert_type(result, AgentResponse[Person])
    assert_type(result.value, Person)
    stream = agent.run("hi", stream=True, output_type=Person)
    assert_type(stream, ResponseStream[AgentResponseUpdate[Person], AgentResponse[Person]])
    async for update in stream:
        assert_type(update.partial_value, Optional[Person])
    assert_type((await stream.get_final_response()).value, Person)
    assert_type((await agent.run("hi")).value, Any)
    converter = StructuredOutputAgent(agent, FakeChatClient("x"))
    assert_type((await converter.run("hi", output_type=Person)).value, Person)
    print(result.text)


def agent_sync() -> None:
    agent = ChatAgent(with_structured_output(FakeChatClient("x")))
    assert_type(agent.run_sync("hi", output_type=Person).value, Person)
    assert_type(agent.run_sync("hi").value, Any)
    assert_type(agent.run_sync("hi", stream=False, output_type=Person).value, Person)


async def feature_and_parse() -> None:
    feature = StructuredOutput(Person, max_retries=1)
    assert_type(feature, StructuredOutput[Person])
    client = with_structured_output(FakeChatClient("x"))
    await client.get_response("hi", options={"features": [feature]})
    assert feature.response is not None
    assert_type(feature.response.value, Person)
    assert_type(StructuredOutput(schema={"type": "object"}), StructuredOutput[Any])
    assert_type(StructuredOutput(Annotated[int, "age"]), StructuredOutput[Any])
    plain = await FakeChatClient("x").get_response("hi")
    assert_type(plain.parse(Person), Person)
    assert_type(plain.try_parse(Person), Optional[Person])
    assert_type(plain.parse(list[int]), list[int])
    run = await ChatAgent(FakeChatClient("x")).run("hi")
    assert_type(run.parse(Person), Person)
    assert_type(run.try_parse(Person), Optional[Person])


def sync_calls() -> None:
    client = with_retries(with_structured_output(FakeChatClient("x")))
    response = client.get_response_sync("hi", output_type=Person)
    assert_type(response, ChatResponse[Person])
    assert_type(response.value, Person)
    stream = client.get_response_sync("hi", stream=True, output_type=Person)
    assert_type(stream, SyncResponseStream[ChatResponseUpdate[Person], ChatResponse[Person]])
    with stream:
        for update in stream:
            assert_type(update, ChatResponseUpdate[Person])
    assert_type(stream.get_final_response().value, Person)
    assert_type(FakeChatClient("x").get_response_sync("hi"), ChatResponse[Any])
    assert_type(FakeChatClient("x").get_response_sync("hi", stream=True).get_final_response(), ChatResponse[Any])


async def converter_runs() -> None:
    """`StructuredOutputAgent.run` takes every argument of `ChatAgent.run`, `continuation_token` included."""
    converter = StructuredOutputAgent(ChatAgent(FakeChatClient("x")), FakeChatClient("x"))
    polled = await converter.run(continuation_token="run-1", output_type=Person)
    assert_type(polled, AgentResponse[Person])
    resumed = converter.run(continuation_token="run-1", stream=True, output_type=Person)
    assert_type(resumed, ResponseStream[AgentResponseUpdate[Person], AgentResponse[Person]])
    assert_type(converter.run_sync("hi", output_type=Person, continuation_token="run-1").value, Person)
    assert_type((await converter.run("hi")).value, Any)


async def typed_input() -> None:
    """`input_type=Person` makes a `ChatAgent[Person]`: its run takes a `Person` (or messages)."""
    agent = ChatAgent(with_structured_output(FakeChatClient("x")), input_type=Person)
    assert_type(agent, ChatAgent[Person])
    assert_type((await agent.run(Person(name="Ada", age=36), output_type=Row)).value, Row)
    print((await agent.run("hi")).text)
    assert_type(agent.run_sync(Person(name="Ada", age=36), output_type=Row).value, Row)
