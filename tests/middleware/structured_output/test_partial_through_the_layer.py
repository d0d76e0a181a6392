"""The partial parser as the structured-output layer uses it (split from tests/schema/test_partial.py,
whose unit tests call the parser itself)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

from so_middleware import ChatResponseUpdate, FinishReason, TextContent, UsageDetails, with_structured_output
from so_middleware.testing import FakeChatClient


class Address(BaseModel):
    city: str
    zip: str


class Person(BaseModel):
    name: str
    age: int
    address: Address
    tags: list[str] = []
    note: str | None = None


class Pet(BaseModel):
    name: str
    tags: list[str] = []


class People(BaseModel):
    title: str
    people: list[Person]
    pets: list[Pet] = []


@pytest.mark.anyio
async def test_streamed_updates_carry_the_items_of_a_list_inside_a_model() -> None:
    """docs/how-to/streaming.md: `update.completed_items` holds the list items that just closed."""
    people = [{"name": f"p{index}", "age": index, "address": {"city": "c", "zip": "z"}} for index in range(2)]
    fake = FakeChatClient([json.dumps({"title": "t", "people": people})])
    stream = with_structured_output(fake).get_response("Who?", output_type=People, stream=True)
    seen: list[Any] = []
    async with stream:
        async for update in stream:
            seen.extend(update.completed_items)
    assert seen == [Person.model_validate(person) for person in people]
    assert (await stream.get_final_response()).value.people == seen


class _ScriptedUpdates(FakeChatClient):
    """Streams the given updates as they are (every field the server's update may carry)."""

    def __init__(self, updates: list[ChatResponseUpdate[Any]]) -> None:
        super().__init__(["unused"])
        self._updates = updates

    async def _stream(self, messages: Any, options: Any) -> AsyncIterator[ChatResponseUpdate[Any]]:
        for update in self._updates:
            yield update


@dataclasses.dataclass
class _OwnUpdate(ChatResponseUpdate[Any]):
    """An adapter's own update type, with a field of its own."""

    server_note: str = ""


@pytest.mark.anyio
@pytest.mark.parametrize("kind", [ChatResponseUpdate, _OwnUpdate])
async def test_each_streamed_update_keeps_the_servers_fields_and_type(kind: type[ChatResponseUpdate[Any]]) -> None:
    """The layer's update is the server's with the answer's delta and the partial value: its usage,
    finish reason, ids, raw form and its own type and fields are kept; the caller's update is a new one."""
    raw = {"event": 1}
    extra = {"server_note": "n"} if kind is _OwnUpdate else {}
    sent = [
        kind([TextContent('{"name": "Rex"')], role="assistant", response_id="r", model_id="m", **extra),
        kind(
            [TextContent("}")], role="assistant", usage=UsageDetails(3, 2, 5), finish_reason=FinishReason.STOP,
            response_id="r", model_id="m", raw_representation=raw, additional_properties={"k": 1}, **extra,
        ),
    ]  # fmt: skip
    stream = with_structured_output(_ScriptedUpdates(sent)).get_response("Pet?", output_type=Pet, stream=True)
    seen = [update async for update in stream]
    assert [type(update) for update in seen] == [kind, kind]
    assert all(update is not original for update, original in zip(seen, sent, strict=True))
    last = seen[-1]
    assert (last.usage, last.finish_reason, last.response_id, last.model_id) == (
        UsageDetails(3, 2, 5), FinishReason.STOP, "r", "m",
    )  # fmt: skip
    assert last.raw_representation is raw
    assert (last.text, last.attempt, last.additional_properties, last.partial_value) == ("}", 0, {}, Pet(name="Rex"))
    assert getattr(last, "server_note", None) == extra.get("server_note")
    assert sent[1].additional_properties == {"k": 1} and sent[1].text == "}"  # the server's own is unchanged


@pytest.mark.anyio
@pytest.mark.parametrize("prone", [False, True])
async def test_only_a_backend_prone_to_loops_has_its_stream_watched(
    prone: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop watch reads the updates of a backend prone to loops only; elsewhere no update pays for it."""
    from so_middleware.schema import LoopWatch

    watched: list[str] = []
    real_add = LoopWatch.add
    monkeypatch.setattr(LoopWatch, "add", lambda watch, delta: watched.append(delta) or real_add(watch, delta))
    fake = FakeChatClient(['{"name": "Rex", "tags": ["a"]}'])
    fake.capabilities = fake.capabilities.replace(prone_to_loops=prone)
    stream = with_structured_output(fake).get_response("Pet?", output_type=Pet, stream=True)
    async for _ in stream:
        pass
    assert (await stream.get_final_response()).value == Pet(name="Rex", tags=["a"])
    assert "".join(watched) == ('{"name": "Rex", "tags": ["a"]}' if prone else "")


@pytest.mark.anyio
async def test_an_updates_text_piece_is_passed_on_not_made_again() -> None:
    """A server's update of one text piece reaches the caller with that very (frozen) content in a
    list of its own: the caller's list is not the server's."""
    sent = [ChatResponseUpdate([TextContent('{"name": ')]), ChatResponseUpdate([TextContent('"Rex"}')])]
    stream = with_structured_output(_ScriptedUpdates(sent)).get_response("Pet?", output_type=Pet, stream=True)
    seen = [update async for update in stream]
    assert [update.contents[0] for update in seen] == [update.contents[0] for update in sent]
    assert all(mine.contents[0] is theirs.contents[0] for mine, theirs in zip(seen, sent, strict=True))
    assert all(mine.contents is not theirs.contents for mine, theirs in zip(seen, sent, strict=True))
    assert seen[-1].partial_value == Pet(name="Rex")
