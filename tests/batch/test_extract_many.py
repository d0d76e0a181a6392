"""extract_many: inputs and ids, per-item results in completion order, the resumable JSONL output,
the summary. Against `ExtractionServer`, a real HTTP server on loopback, through the OpenAI SDK."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import openai
import pytest
from extraction_server import ExtractionServer, Row

from so_middleware import ModelBehaviorError, UsageDetails, UserError, run_sync
from so_middleware.batch import (
    Item,
    ItemResult,
    ResultLog,
    ServerUnreachableError,
    extract_many,
    extract_many_sync,
    price_of,
    read_inputs,
)
from so_middleware.batch._summary import hosted_provider
from so_middleware.local import LocalModelServer, chat_client
from so_middleware.openai import OpenAIChatClient

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Any:
    with ExtractionServer(invalid=frozenset({7})) as running:
        yield running


@pytest.fixture
async def adapter(server: ExtractionServer) -> AsyncIterator[OpenAIChatClient]:
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test") as sdk:
        yield OpenAIChatClient(sdk, "m", discover=False)


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ------------------------------------------------------------------ inputs


def test_ids_are_given_or_derived_from_the_text_stably() -> None:
    items = list(read_inputs(["item 1", ("b", "item 2"), {"id": 3, "text": "item 3"}, Item("d", "x"), "item 1"]))
    assert [item.id for item in items[1:4]] == ["b", "3", "d"]
    assert len(items[0].id) == 16 and items[4].id == items[0].id + "#2"  # the same text again: its own id
    assert [item.id for item in read_inputs(["item 1", "item 1"])] == [items[0].id, items[4].id]  # stable


def test_inputs_from_jsonl_csv_and_a_directory(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "item 1"}\n\n"item 2"\n')
    (tmp_path / "in.csv").write_text('key,body\nk1,item 3\nk2,"item, 4"\n')
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "b.txt").write_text("item 5")
    (docs / "sub" / "a.txt").write_text("item 6")
    (docs / ".hidden").write_text("skipped")
    assert [i.text for i in read_inputs(tmp_path / "in.jsonl")] == ["item 1", "item 2"]
    assert next(read_inputs(str(tmp_path / "in.jsonl"))).id == "a"
    rows = list(read_inputs(tmp_path / "in.csv", id_field="key", text_field="body"))
    assert rows == [Item("k1", "item 3"), Item("k2", "item, 4")]
    assert list(read_inputs(docs)) == [Item("b.txt", "item 5"), Item("sub/a.txt", "item 6")]


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ([("a", "x"), ("a", "y")], "'a' was already given"),
        ([{"body": "x"}], "no 'text' field"),
        (["  "], "non-empty string"),
        ([42], "expected a str"),
        ([("", "x")], "the id must be"),
        ("missing.jsonl", "no such input"),
        ({"a": 1}, "must be a path or an iterable"),
    ],
)
def test_bad_inputs_are_user_errors(inputs: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        list(read_inputs(inputs))


def test_a_jsonl_line_that_is_not_json_is_named(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text('"item 1"\n{broken\n')
    with pytest.raises(UserError, match=r"in.jsonl:2 is not JSON"):
        list(read_inputs(tmp_path / "in.jsonl"))


# ------------------------------------------------------------------ results


def test_the_output_settings_reach_every_item() -> None:
    """`mode`, `name`, `description`, `strict` and `max_retries` are the structured-output
    settings of each item's run."""
    from so_middleware.testing import FakeChatClient

    fake = FakeChatClient(['{"n": 1, "word": "w1"}', "not json"])
    settings: dict[str, Any] = {"mode": "native", "name": "row_answer", "description": "one row", "strict": False}
    results = list(
        extract_many_sync(fake, [("a", "item 1"), ("b", "item 2")], Row, concurrency=1, max_retries=0, **settings)
    )
    sent = fake.calls[0].options.response_format
    assert sent is not None and (sent.name, sent.description, sent.strict) == ("row_answer", "one row", False)
    assert [result.ok for result in results] == [True, False]
    assert len(results[1].attempts) == 1 and len(fake.calls) == 2  # max_retries=0: no re-ask


async def test_every_item_ends_once_as_a_value_or_a_typed_error(adapter: Any, tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    run = extract_many(
        adapter, [(f"id{n}", f"item {n}") for n in range(1, 13)], Row, output=output, concurrency=4, max_retries=1
    )
    results: list[ItemResult[Row]] = [result async for result in run]
    by_id = {result.id: result for result in results}
    assert len(results) == 12 and len(by_id) == 12
    assert by_id["id3"].value == Row(n=3, word="w3") and by_id["id3"].ok
    assert by_id["id3"].usage == UsageDetails(10, 5, 15) and len(by_id["id3"].attempts) == 1
    failed = by_id["id7"]
    assert not failed.ok and isinstance(failed.error, ModelBehaviorError)
    # the raw text of each: native, tool and json_object ignored (prose), prompted, then its one re-ask
    assert [attempt.text for attempt in failed.attempts] == ["not json"] * 5
    assert failed.usage == UsageDetails(50, 25, 75)
    assert (run.summary.done, dict(run.summary.failed), run.summary.skipped) == (11, {"ModelBehaviorError": 1}, 0)
    assert run.summary.usage == UsageDetails(160, 80, 240)
    assert run.summary.cost is None  # no price for model "m"
    records = {record["id"]: record for record in lines_of(output)}
    assert records.keys() == by_id.keys()
    assert records["id3"] == {
        "id": "id3",
        "ok": True,
        "value": {"n": 3, "word": "w3"},
        "attempts": [
            {
                "text": '{"n": 3, "word": "w3"}',
                "error": None,
                "strategy": "native",
                "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
            }
        ],
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        "seconds": records["id3"]["seconds"],
    }
    assert records["id7"]["error"]["type"] == "ModelBehaviorError"
    assert [a["text"] for a in records["id7"]["attempts"]] == ["not json"] * 5
    assert "done 11, failed 1 (ModelBehaviorError 1), skipped 0" in str(run.summary)


async def test_a_rerun_skips_done_and_failed_ids_and_retries_failed_ones_only_if_asked(
    server: ExtractionServer, adapter: Any, tmp_path: Path
) -> None:
    output = tmp_path / "out.jsonl"
    inputs = [f"item {n}" for n in range(1, 9)]
    first = [r async for r in extract_many(adapter, inputs, Row, output=output, max_retries=0)]
    # seven answered at once; item 7's prose is tried on each of the four strategies (no re-ask)
    assert len(first) == 8 and len(server.served) == 7 + 4
    again = extract_many(adapter, inputs, Row, output=output, max_retries=0)
    assert [r async for r in again] == [] and again.summary.skipped == 8 and len(server.served) == 11
    server.invalid = frozenset()  # item 7 would now succeed
    retried = extract_many(adapter, inputs, Row, output=output, retry_failed=True, max_retries=0)
    results = [r async for r in retried]
    assert [(r.value, retried.summary.skipped) for r in results] == [(Row(n=7, word="w7"), 7)]
    assert server.items_requested()[11:] == [7]
    records = lines_of(output)
    assert sorted(r["id"] for r in records) == sorted(i.id for i in read_inputs(inputs))  # each id once
    assert all(r["ok"] for r in records)


async def test_a_torn_last_line_is_dropped_and_its_item_runs_again(adapter: Any, tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    inputs = [("a", "item 1"), ("b", "item 2"), ("c", "item 3")]
    async for _ in extract_many(adapter, inputs[:2], Row, output=output):
        pass
    whole = output.read_bytes()
    output.write_bytes(whole + b'{"id": "c", "ok": tr')  # a kill in the middle of a write
    log = ResultLog(output)
    log.close()
    assert output.read_bytes() == whole and log.done == {"a", "b"}
    results = [r async for r in extract_many(adapter, inputs, Row, output=output)]
    assert [r.id for r in results] == ["c"]
    assert sorted(r["id"] for r in lines_of(output)) == ["a", "b", "c"]


def test_an_output_in_a_missing_directory_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot write the results to"):
        ResultLog(tmp_path / "missing" / "out.jsonl")


def test_a_broken_line_before_the_last_is_a_user_error(tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    output.write_text('{"id": "a", "ok": true}\nnot a result\n{"id": "b", "ok": true}\n')
    with pytest.raises(UserError, match=r"out\.jsonl:2 is not a result line"):
        ResultLog(output)


async def test_leaving_early_keeps_every_written_line_and_a_rerun_finishes(adapter: Any, tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    inputs = [f"item {n}" for n in range(100, 160)]
    seen = []
    async with extract_many(adapter, inputs, Row, output=output, concurrency=4) as run:
        async for result in run:
            seen.append(result.id)
            if len(seen) == 5:
                break
    written = [r["id"] for r in lines_of(output)]
    assert set(seen) <= set(written) and len(written) < 60
    rest = [r.id async for r in extract_many(adapter, inputs, Row, output=output, concurrency=4)]
    assert not set(rest) & set(written)
    assert sorted(r["id"] for r in lines_of(output)) == sorted(i.id for i in read_inputs(inputs))


async def test_a_second_run_on_an_output_in_use_is_refused(adapter: Any, tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    async with extract_many(adapter, ["item 1"], Row, output=output):
        with pytest.raises(UserError, match="being written by another run"):
            extract_many(adapter, ["item 1"], Row, output=output)
    assert [r.id async for r in extract_many(adapter, [("a", "item 1")], Row, output=output)] == ["a"]


async def test_cancelling_the_consumer_stops_the_items_in_flight(server: ExtractionServer, adapter: Any) -> None:
    server.delay = 0.5
    with anyio.move_on_after(0.2):
        async for _ in extract_many(adapter, [f"item {n}" for n in range(50)], Row, concurrency=3):
            pass
    await anyio.sleep(0.6)
    assert len(server.served) == 3  # three were in flight; none started after the cancellation


def test_the_sync_wrapper_iterates_from_plain_code(server: ExtractionServer, tmp_path: Path) -> None:
    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
    run = extract_many_sync(
        OpenAIChatClient(sdk, "m", discover=False), [f"item {n}" for n in range(1, 5)], Row, concurrency=2
    )
    values = sorted(result.value.n for result in run if result.value is not None)
    run_sync(sdk.close)  # its connections belong to the blocking calls' loop
    assert values == [1, 2, 3, 4] and run.summary.done == 4


def test_a_run_is_one_iterator_a_second_for_reads_on_and_starts_nothing_again(server: ExtractionServer) -> None:
    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
    run = extract_many_sync(
        OpenAIChatClient(sdk, "m", discover=False), [f"item {n}" for n in range(1, 5)], Row, concurrency=1
    )
    first = next(iter(run))
    rest = [result.value.n for result in run if result.value is not None]
    run_sync(sdk.close)
    assert first.value is not None and sorted([first.value.n, *rest]) == [1, 2, 3, 4]
    assert len(server.served) == 4 and run.summary.done == 4


def test_a_bad_concurrency_or_type_fails_before_any_call(server: ExtractionServer) -> None:
    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
    with pytest.raises(UserError, match="concurrency"):
        extract_many(OpenAIChatClient(sdk, "m", discover=False), ["item 1"], Row, concurrency=0)
    with pytest.raises(UserError):
        extract_many(OpenAIChatClient(sdk, "m", discover=False), ["item 1"], lambda: 1)
    assert server.served == []


async def test_an_item_rate_limited_on_every_retry_ends_as_the_sdks_error(tmp_path: Path) -> None:
    with ExtractionServer(rate_limited=1.0, retry_after_ms=10) as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test") as sdk:
            run = extract_many(OpenAIChatClient(sdk, "m", discover=False), [("a", "item 1")], Row, max_attempts=2)
            [result] = [r async for r in run]
    assert isinstance(result.error, openai.RateLimitError) and result.attempts == [] and result.usage is None
    assert len(server.served) == 2 and dict(run.summary.failed) == {"RateLimitError": 1}
    assert result.to_record(Row)["error"] == {
        "type": "RateLimitError",
        "status_code": 429,
        "message": result.to_record(Row)["error"]["message"],
    }


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_server_that_cannot_be_reached_stops_the_run_naming_its_address(tmp_path: Path) -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    output = tmp_path / "out.jsonl"
    async with openai.AsyncOpenAI(base_url=base_url, api_key="test") as sdk:
        run = extract_many(
            OpenAIChatClient(sdk, "m", discover=False),
            [f"item {n}" for n in range(200)],
            Row,
            output=output,
            concurrency=4,
            max_attempts=1,
        )
        results: list[ItemResult[Row]] = []
        with pytest.raises(ServerUnreachableError) as stopped:
            async for result in run:
                results.append(result)
    assert stopped.value.failures == 10 and isinstance(stopped.value, ConnectionError)
    assert f"could not connect (APIConnectionError: Connection error: cannot reach {base_url}" in str(stopped.value)
    assert "--retry-failed" in str(stopped.value)
    assert 10 <= len(results) < 10 + 4  # the items in flight end; none starts after the tenth
    assert len(lines_of(output)) == len(results) and run.summary.failed == {"APIConnectionError": len(results)}


def test_the_layers_are_added_unless_the_client_has_them() -> None:
    from so_middleware import LimitsChatClient, RetryingChatClient, StructuredOutputChatClient, with_limits
    from so_middleware.batch import build_client
    from so_middleware.testing import FakeChatClient

    stack: Any = build_client(FakeChatClient("x"), concurrency=3)
    limits = stack.get_service(LimitsChatClient)
    assert stack.get_service(StructuredOutputChatClient) is stack and stack.get_service(RetryingChatClient)
    assert limits is not None and limits.stats().concurrency == 3
    own = with_limits(FakeChatClient("x"), max_concurrency=5)
    assert build_client(own, concurrency=3).get_service(LimitsChatClient) is own  # kept, not doubled


def test_lines_are_fsynced_in_small_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    log = ResultLog(tmp_path / "out.jsonl", fsync_every=3, fsync_seconds=3600)
    for n in range(7):
        log.append({"id": str(n), "ok": True})
        assert len(tmp_path.joinpath("out.jsonl").read_text().splitlines()) == n + 1  # written at once
    assert len(synced) == 2  # after lines 3 and 6
    log.close()
    assert len(synced) == 3  # and the last one at close


def test_cost_comes_from_the_price_table_where_the_model_is_known() -> None:
    cost = price_of(UsageDetails(1_000_000, 1_000_000), "gpt-4o-mini", "openai")
    assert isinstance(cost, Decimal) and cost == Decimal("0.75")  # $0.15 in + $0.60 out per million
    assert price_of(UsageDetails(10, 5), "SmolLM2-135M-Instruct", None) is None
    assert price_of(None, "gpt-4o-mini", "openai") is None


async def test_a_model_on_a_local_server_has_no_price_whatever_its_name(server: ExtractionServer) -> None:
    """A model name the price table knows is priced only on its provider's own API: the same SDK on a
    local or self-hosted server runs something else, at no price the table can know."""
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test") as sdk:
        local = OpenAIChatClient(sdk, "gpt-4o-mini", discover=False)
        run = extract_many(local, ["item 1", "item 2"], Row)
        assert [result.ok async for result in run] == [True, True]
    assert run.summary.usage is not None and run.summary.cost is None
    assert "cost unknown (no price for this model)" in str(run.summary)
    assert hosted_provider(local) is None
    async with openai.AsyncOpenAI(api_key="test") as hosted:
        assert hosted_provider(OpenAIChatClient(hosted, "gpt-4o-mini", discover=False)) == "openai"


@pytest.mark.local_server
async def test_extract_many_on_the_real_local_model(local_server: LocalModelServer, tmp_path: Path) -> None:
    from pydantic import BaseModel

    class Person(BaseModel):
        name: str
        age: int

    texts = {"ada": "Ada Lovelace was 36.", "bob": "Bob Smith is 41 years old.", "cy": "Cy Young, aged 29."}
    client = chat_client(local_server)
    try:
        run = extract_many(
            client,
            texts.items(),
            Person,
            output=tmp_path / "out.jsonl",
            concurrency=2,
            options={"max_tokens": 64, "temperature": 0},
        )
        results = {r.id: r async for r in run}
    finally:
        await client.sdk_client.close()  # type: ignore[attr-defined]
    assert results.keys() == texts.keys()
    for result in results.values():
        assert (result.ok and isinstance(result.value, Person)) or isinstance(result.error, Exception)
        assert result.attempts and all(attempt.text for attempt in result.attempts)
    assert run.summary.finished == 3 and run.summary.usage is not None and run.summary.usage.output_tokens
    assert len(lines_of(tmp_path / "out.jsonl")) == 3
