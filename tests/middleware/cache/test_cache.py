"""with_cache over FakeChatClient and the real local server: keys, replay, what is never stored, stores."""

from __future__ import annotations

import copy
import logging
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import httpx2
import pytest
from pydantic import AfterValidator, BaseModel, field_validator

from so_middleware import (
    CachingChatClient,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    DataContent,
    Feature,
    FunctionTool,
    MemoryStore,
    StructuredOutput,
    TextContent,
    UsageDetails,
    UserError,
    disk_store,
    request_key,
    with_cache,
    with_structured_output,
)
from so_middleware.local import LocalModelServer
from so_middleware.openai import LLAMA_SERVER, OpenAIChatClient
from so_middleware.testing import FakeChatClient, HttpRecorder, Reply, final_response

pytestmark = pytest.mark.anyio

HIT = "so_middleware.cache_hit"


class Person(BaseModel):
    name: str
    age: int


class Other(BaseModel):
    title: str


class Tagging(Feature):
    """A feature with plain data and an object nothing can describe."""

    def __init__(self, team: str, hook: Any = None) -> None:
        self.team = team
        self.hook = hook


async def stream_texts(client: Any, *args: Any, **kwargs: Any) -> tuple[list[str], ChatResponse[Any]]:
    stream = client.get_response(*args, stream=True, **kwargs)
    texts = [update.text async for update in stream]
    return texts, await stream.get_final_response()


@pytest.mark.parametrize("stream", [False, True])
async def test_the_same_request_is_answered_from_the_store(stream: bool) -> None:
    fake = FakeChatClient(["first answer", "second answer"])
    client = with_cache(fake)
    first = await final_response(client, "hi", stream=stream, options={"temperature": 0})
    again = await final_response(client, "hi", stream=stream, options={"temperature": 0})
    assert len(fake.calls) == 1
    assert (again.text, again.usage, again.finish_reason) == (first.text, first.usage, first.finish_reason)
    assert again.additional_properties[HIT] is True and HIT not in first.additional_properties


async def test_a_stream_replays_the_same_updates_then_the_same_final_response() -> None:
    fake = FakeChatClient(Reply("a longer answer in pieces", chunk_size=5))
    client = with_cache(fake)
    texts, final = await stream_texts(client, "hi")
    replayed, replayed_final = await stream_texts(client, "hi")
    assert len(fake.calls) == 1 and len(texts) > 2
    assert replayed == texts
    assert (replayed_final.text, replayed_final.usage, replayed_final.response_id) == (
        final.text,
        final.usage,
        final.response_id,
    )


async def test_an_answer_stored_by_a_plain_call_streams_as_one_update_and_back() -> None:
    fake = FakeChatClient(["one", "two"])
    client = with_cache(fake)
    plain = await client.get_response("a")
    texts, final = await stream_texts(client, "a")
    assert texts == ["one"] and final.text == "one" and final.usage == plain.usage
    streamed_first, _ = await stream_texts(client, "b")
    assert (await client.get_response("b")).text == "".join(streamed_first)
    assert len(fake.calls) == 2


@pytest.mark.parametrize(
    "change",
    [
        {"messages": "bye"},
        {"messages": [ChatMessage("system", "Be terse."), ChatMessage("user", "hi")]},
        {"options": {"temperature": 0.5}},
        {"options": {"model": "other"}},
        {"options": {"response_format": {"type": "json_object"}}},
        {"options": {"features": [StructuredOutput(Other)]}},
        {"options": {"features": [StructuredOutput(Person, mode="prompted")]}},
        {"output_type": Other},
    ],
    ids=["message", "system", "temperature", "model", "format", "feature-type", "feature-mode", "output-type"],
)
def test_anything_the_request_says_changes_the_key(change: dict[str, Any]) -> None:
    base: dict[str, Any] = {
        "messages": "hi",
        "options": {"features": [StructuredOutput(Person)]},
        "output_type": Person,
    }
    assert request_key(**base) != request_key(**{**base, **change})


def test_the_key_is_stable_across_spellings_and_feature_instances() -> None:
    feature = StructuredOutput(Person)
    before = request_key("hi", {"temperature": 0, "features": [feature]})
    feature.response = ChatResponse(ChatMessage("assistant", "{}"))  # the feature carried a result back
    assert request_key(["hi"], {"temperature": 0, "features": [feature]}) == before
    spelled_out = ChatOptions(temperature=0, additional_properties={"features": [StructuredOutput(Person)]})
    assert request_key([ChatMessage("user", "hi")], spelled_out) == before
    image = [ChatMessage("user", [TextContent("what is it?"), DataContent(b"\x89PNG...", "image/png")])]
    assert (
        request_key(image) == request_key(image) != request_key([ChatMessage("user", [DataContent(b"x", "image/png")])])
    )


@pytest.mark.parametrize("stream", [False, True])
async def test_features_nothing_can_describe_do_not_break_the_key(stream: bool) -> None:
    fake = FakeChatClient(["one", "two", "three"])
    client = with_cache(fake)
    lock_like = object()
    await final_response(client, "hi", stream=stream, options={"features": [Tagging("a", hook=lambda: 1)]})
    again = await final_response(client, "hi", stream=stream, options={"features": [Tagging("a", hook=lock_like)]})
    other = await final_response(client, "hi", stream=stream, options={"features": [Tagging("b")]})
    assert again.additional_properties[HIT] and other.text == "two"
    assert len(fake.calls) == 2


@pytest.mark.parametrize("stream", [False, True])
async def test_sampled_calls_are_cached_unless_the_key_hook_says_no(stream: bool) -> None:
    fake = FakeChatClient(["one", "two", "three"])
    cached = with_cache(fake)
    await final_response(cached, "hi", stream=stream, options={"temperature": 1.0})
    assert (await final_response(cached, "hi", stream=stream, options={"temperature": 1.0})).text == "one"
    live = with_cache(fake, key=lambda m, o, t: None if o.temperature else request_key(m, o, t))
    assert (await final_response(live, "hi", stream=stream, options={"temperature": 1.0})).text == "two"
    assert (await final_response(live, "hi", stream=stream, options={"temperature": 1.0})).text == "three"
    assert len(fake.calls) == 3


@pytest.mark.parametrize("stream", [False, True])
async def test_an_error_is_never_stored(stream: bool) -> None:
    fake = FakeChatClient([ConnectionError("down"), "ok"])
    client = with_cache(fake)
    with pytest.raises(ConnectionError):
        await final_response(client, "hi", stream=stream)
    assert (await final_response(client, "hi", stream=stream)).text == "ok"
    assert HIT in (await final_response(client, "hi", stream=stream)).additional_properties
    assert len(fake.calls) == 2


async def test_a_stream_broken_mid_way_is_not_stored() -> None:
    fake = FakeChatClient([Reply("partial answer", error=ConnectionError("cut"), fail_after=1), "whole answer"])
    client = with_cache(fake)
    with pytest.raises(ConnectionError):
        await stream_texts(client, "hi")
    assert (await client.get_response("hi")).text == "whole answer"


async def test_a_stream_closed_early_is_not_stored_and_the_inner_stream_is_closed() -> None:
    fake = FakeChatClient([Reply("a long answer in pieces", chunk_size=2), "second"])
    client = with_cache(fake)
    stream = client.get_response("hi", stream=True)
    async with stream:
        async for _ in stream:
            break
    assert fake.closed_streams == 1
    assert (await client.get_response("hi")).text == "second"


async def test_a_caller_changing_a_hit_does_not_change_the_store() -> None:
    client = with_cache(FakeChatClient("answer"))
    first = await client.get_response("hi")
    first.additional_properties["mine"] = 1
    hit = await client.get_response("hi")
    hit.messages[0].contents.append(TextContent(" changed"))
    hit.additional_properties["mine"] = 2
    again = await client.get_response("hi")
    assert again.text == "answer" and "mine" not in again.additional_properties


def test_memory_store_is_a_bounded_lru() -> None:
    store = MemoryStore(maxsize=2)
    store.set("a", 1)
    store.set("b", 2)
    assert store.get("a") == 1  # a is now the most recently used
    store.set("c", 3)
    assert (store.get("a"), store.get("b"), store.get("c"), len(store)) == (1, None, 3, 2)
    with pytest.raises(UserError, match="maxsize"):
        MemoryStore(maxsize=0)


async def test_a_deep_copy_of_the_layer_has_its_own_store() -> None:
    layer = with_cache(FakeChatClient(["one", "two"]))
    await layer.get_response("hi")
    clone = copy.deepcopy(layer)
    assert (await clone.get_response("hi")).additional_properties[HIT]  # the entries came along
    await clone.get_response("other")
    assert len(clone.store) == 2 and len(layer.store) == 1


async def test_clients_over_different_models_share_a_store_without_colliding() -> None:
    store = MemoryStore()
    small = with_cache(FakeChatClient("small says", model="small"), store=store)
    large = with_cache(FakeChatClient("large says", model="large"), store=store)
    assert (await small.get_response("hi")).text == "small says"
    assert (await large.get_response("hi")).text == "large says"
    assert len(store) == 2


@pytest.mark.parametrize("stream", [False, True])
async def test_disk_store_survives_a_new_layer_and_keeps_the_value(tmp_path: Path, stream: bool) -> None:
    fake = FakeChatClient('{"name": "Ada", "age": 36}')
    first = with_cache(with_structured_output(fake), store=disk_store(str(tmp_path)))
    stored = await final_response(first, "Ada, 36", stream=stream, output_type=Person)
    second = with_cache(with_structured_output(fake), store=disk_store(str(tmp_path)))
    hit = await final_response(second, "Ada, 36", stream=stream, output_type=Person)
    assert len(fake.calls) == 1
    assert hit.value == stored.value == Person(name="Ada", age=36)
    assert hit.additional_properties[HIT] and hit.attempts[0].strategy == stored.attempts[0].strategy
    assert hit.raw_representation is None


async def test_a_response_the_disk_store_cannot_pickle_is_returned_and_not_stored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Local(BaseModel):  # a class pickle cannot find by name
        n: int

    fake = FakeChatClient('{"n": 1}')
    client = with_cache(with_structured_output(fake), store=disk_store(str(tmp_path)))
    with caplog.at_level(logging.WARNING, logger="so_middleware"):
        response = await client.get_response("one", output_type=Local)
        assert response.value == Local(n=1)
        await client.get_response("one", output_type=Local)
    assert len(fake.calls) == 2
    assert "response not stored" in caplog.text


@pytest.mark.parametrize("stream", [False, True])
async def test_below_structured_output_each_model_call_is_cached_and_validated_again(stream: bool) -> None:
    fake = FakeChatClient(['{"name": "Ada"}', '{"name": "Ada", "age": 36}'])  # the first is re-asked
    client = with_structured_output(with_cache(fake))
    first = await final_response(client, "Ada, 36", stream=stream, output_type=Person)
    feature = StructuredOutput(Person)
    again = await final_response(client, "Ada, 36", stream=stream, options={"features": [feature]})
    assert len(fake.calls) == 2 and len(again.attempts) == len(first.attempts) == 2
    assert again.value == first.value and feature.response is again


def test_a_bad_store_is_refused() -> None:
    with pytest.raises(UserError, match="get\\(key\\) and set\\(key, value\\)"):
        CachingChatClient(FakeChatClient("x"), store={})  # type: ignore[arg-type]


@pytest.mark.local_server
@pytest.mark.parametrize("stream", [False, True])
async def test_the_real_server_is_called_once(local_server: LocalModelServer, stream: bool) -> None:
    """Two identical requests through the OpenAI SDK: one HTTP request, the same answer twice."""
    import openai

    recorder = HttpRecorder()
    http = httpx2.AsyncClient(event_hooks=recorder.hooks(is_async=True))
    sdk = openai.AsyncOpenAI(base_url=local_server.base_url, api_key="local", http_client=http)
    try:
        client = with_cache(OpenAIChatClient(sdk, local_server.model, capabilities=LLAMA_SERVER))
        options = {"max_tokens": 12, "temperature": 0.8}
        if stream:
            texts, first = await stream_texts(client, "Say something about cats.", options=options)
            replayed, again = await stream_texts(client, "Say something about cats.", options=options)
            assert replayed == texts
        else:
            first = await client.get_response("Say something about cats.", options=options)
            again = await client.get_response("Say something about cats.", options=options)
        assert len(recorder.bodies) == 1
        assert first.text and again.text == first.text and again.usage == first.usage
        assert again.additional_properties[HIT] is True
    finally:
        await sdk.close()


async def test_a_plain_answer_of_several_messages_replays_one_update_each_and_ends_once() -> None:
    class TwoMessages(FakeChatClient):
        async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
            self.calls.append(messages)  # type: ignore[arg-type]
            usage = UsageDetails(3, 2, 5)
            return ChatResponse([ChatMessage("assistant", "a"), ChatMessage("assistant", "b")], usage=usage)

    client = with_cache(TwoMessages())
    await client.get_response("hi")
    stream = client.get_response("hi", stream=True)
    updates = [update async for update in stream]
    assert [u.text for u in updates] == ["a", "b"]
    assert [u.usage for u in updates] == [None, UsageDetails(3, 2, 5)]
    assert (await stream.get_final_response()).text == "b"


# ------------------------------------------------------------ keys that must differ


def person_class(adult: bool) -> type[BaseModel]:
    """A class named Person with the same fields each time; one of them checks the age."""

    class Person(BaseModel):
        name: str
        age: int

        @field_validator("age")
        @classmethod
        def adult(cls, age: int) -> int:
            if adult and age < 18:
                raise ValueError("must be 18 or older")
            return age

    return Person


def at_least(minimum: int) -> Callable[[int], int]:
    def check(value: int) -> int:
        if value < minimum:
            raise ValueError(f"below {minimum}")
        return value

    return check


@pytest.mark.parametrize("stream", [False, True])
async def test_a_class_of_the_same_name_and_fields_with_a_validator_is_not_answered_from_the_other(
    stream: bool,
) -> None:
    fake = FakeChatClient(['{"name": "Tim", "age": 7}', '{"name": "Tom", "age": 30}'])
    client = with_cache(with_structured_output(fake))
    anyone, adult = person_class(adult=False), person_class(adult=True)
    assert anyone.model_json_schema() == adult.model_json_schema()
    child = await final_response(client, "the person", stream=stream, output_type=anyone)
    grown_up = await final_response(client, "the person", stream=stream, output_type=adult)
    assert child.value.age == 7 and grown_up.value.age == 30  # not the cached Person(age=7)
    assert isinstance(grown_up.value, adult) and len(fake.calls) == 2


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (int, Annotated[int, AfterValidator(at_least(18))]),
        (Annotated[int, AfterValidator(at_least(0))], Annotated[int, AfterValidator(at_least(18))]),
        (str, Annotated[str, AfterValidator(str.upper)]),
        (list[int], list[Annotated[int, AfterValidator(at_least(18))]]),
    ],
    ids=["annotated-validator", "closure-value", "plain-text-validator", "nested"],
)
def test_a_validator_changes_the_key(one: Any, other: Any) -> None:
    assert request_key("hi", output_type=one) != request_key("hi", output_type=other)
    features = [{"features": [StructuredOutput(t)]} for t in (one, other)]
    assert request_key("hi", features[0]) != request_key("hi", features[1])


def test_a_key_with_validators_is_the_same_in_another_process(tmp_path: Path) -> None:
    """Validators are described by their code, not their address: a disk store hits across runs."""
    (tmp_path / "shapes.py").write_text(
        "from typing import Annotated\n"
        "from pydantic import AfterValidator, BaseModel, field_validator\n"
        "LIMIT = 18\n"
        "class Adult(BaseModel):\n"
        "    name: Annotated[str, AfterValidator(lambda s: s.strip())]\n"
        "    age: int\n"
        "    tags: set[str] = {'a', 'b', 'c'}\n"
        "    @field_validator('age')\n"
        "    @classmethod\n"
        "    def adult(cls, age: int) -> int:\n"
        "        if age < LIMIT:\n"
        "            raise ValueError('minor')\n"
        "        return age\n"
    )
    program = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from shapes import Adult, Annotated, AfterValidator\n"
        "from so_middleware import StructuredOutput, request_key\n"
        "print(request_key('hi', {'features': [StructuredOutput(Adult)]}, Adult))\n"
        "Age = Annotated[int, AfterValidator(lambda n: n)]\n"
        "print(request_key('hi', {'features': [StructuredOutput(Age)]}, Age))\n"
        "print(request_key('hi', None, Annotated[str, AfterValidator(lambda s: s.strip())]))\n"
    )
    keys = {
        subprocess.run(
            [sys.executable, "-c", program, str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(keys) == 1 and [len(key) for key in keys.pop().split()] == [64, 64, 64]


def nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"items": value}
    return value


@pytest.mark.parametrize("option", ["extra_body", "tools", "response_format"])
def test_requests_that_differ_deep_down_have_different_keys(option: str) -> None:
    def options(leaf: str) -> dict[str, Any]:
        deep = nested(30, leaf)
        if option == "tools":
            return {"tools": [FunctionTool("lookup", {"type": "object", "properties": deep})]}
        if option == "response_format":
            return {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": deep}}}
        return {"extra_body": deep}

    assert request_key("hi", options("one")) != request_key("hi", options("two"))


@pytest.mark.parametrize("stream", [False, True])
async def test_a_request_too_deep_to_describe_is_not_cached(stream: bool) -> None:
    fake = FakeChatClient(["one", "two"])
    client = with_cache(fake)
    deep = {"extra_body": nested(sys.getrecursionlimit() + 100, "x")}
    assert request_key("hi", deep) is None
    assert (await final_response(client, "hi", stream=stream, options=deep)).text == "one"
    assert (await final_response(client, "hi", stream=stream, options=deep)).text == "two"


# ------------------------------------------------------------ streams of typed values


@pytest.mark.parametrize(
    ("output_type", "answer"),
    [
        (Person, '{"name": "Ada Lovelace", "age": 36}'),
        (list[Person], '{"response": [{"name": "Ada", "age": 36}, {"name": "Alan", "age": 41}]}'),
    ],
    ids=["object", "list-with-completed-items"],
)
async def test_a_replayed_stream_has_the_partial_value_each_update_had(output_type: Any, answer: str) -> None:
    fake = FakeChatClient(Reply(answer, chunk_size=4))
    client = with_cache(with_structured_output(fake))
    live = client.get_response("Ada", stream=True, output_type=output_type)
    seen = [(update.text, copy.deepcopy(update.partial_value)) async for update in live]
    replay = client.get_response("Ada", stream=True, output_type=output_type)
    replayed = [(update.text, update.partial_value) async for update in replay]
    assert len(fake.calls) == 1 and (await replay.get_final_response()).additional_properties[HIT]
    assert len({repr(value) for _, value in seen}) > 3  # the value grew along the stream
    assert replayed == seen


# ------------------------------------------------------------ files on disk


@pytest.mark.parametrize("umask", [0o022, 0o000])
async def test_disk_store_files_are_private(tmp_path: Path, umask: int) -> None:
    directory = tmp_path / "cache" / "llm"
    previous = os.umask(umask)
    try:
        client = with_cache(FakeChatClient(["x" * 100_000, "short"]), store=disk_store(str(directory)))
        await client.get_response("a large answer")  # stored in a value file of its own
        await client.get_response("a short answer")  # stored in the database
    finally:
        os.umask(previous)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    files = [path for path in directory.rglob("*") if path.is_file()]
    assert any(path.suffix == ".val" for path in files) and any(path.name == "cache.db-wal" for path in files)
    assert {path.name: oct(stat.S_IMODE(path.stat().st_mode)) for path in files} == {
        path.name: oct(0o600) for path in files
    }
    subdirectories = [path for path in directory.rglob("*") if path.is_dir()]
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o700 for path in subdirectories)
