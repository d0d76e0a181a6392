"""Provider batch engines: OpenAI (Files + Batches) and Anthropic (Message Batches).

A hosted batch cannot run here, so the providers are `httpx2.MockTransport` handlers that answer
with the documented wire bodies: OpenAI's `File` and `Batch` objects, the batch input line
`{custom_id, method, url, body}`, output/error file lines `{id, custom_id, response: {status_code,
body}, error}` (an expired request: `response` null, `error.code` `batch_expired`); Anthropic's
`message_batch` object (`processing_status`, `results_url`) and result lines `{custom_id, result:
{type: succeeded | errored | canceled | expired, ...}}`. The real SDKs and the real adapters and
layers run on top.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from extraction_server import Row

from so_middleware import ModelBehaviorError, ProviderStatusError, UsageDetails, UserError
from so_middleware.anthropic import AnthropicChatClient
from so_middleware.batch import BatchJobError, extract_batch, price_of
from so_middleware.openai import OpenAIChatClient

pytestmark = pytest.mark.anyio


def item_of(messages: list[dict[str, Any]]) -> int:
    first_user = next(m for m in messages if m["role"] == "user")
    content = first_user["content"]
    text = content if isinstance(content, str) else json.dumps(content)
    found = re.search(r"item (\d+)", text)
    assert found, messages
    return int(found.group(1))


class Model:
    """The scripted model: item 3 answers wrongly the first time, item 5 always; item 6 is refused (None).
    A wrong answer is `not json` as text, and a wrongly typed value as a forced tool call."""

    def __init__(self) -> None:
        self.asked: Counter[int] = Counter()

    def answer(self, messages: list[dict[str, Any]], tool: bool) -> str | None:
        item = item_of(messages)
        self.asked[item] += 1
        if item == 6:
            return None
        if item == 5 or (item == 3 and self.asked[item] == 1):
            return '{"n": "not a number", "word": 1}' if tool else "not json"
        return json.dumps({"n": item, "word": f"w{item}"})


def multipart_file(request: httpx2.Request) -> bytes:
    boundary = re.search(r"boundary=([^;]+)", request.headers["content-type"]).group(1).encode()  # type: ignore[union-attr]
    for part in request.content.split(b"--" + boundary):
        if b'name="file"' in part:
            return part.split(b"\r\n\r\n", 1)[1].rsplit(b"\r\n", 1)[0]
    raise AssertionError("no file part")


Mangle = dict[int, Callable[[dict[str, Any]], str]]  # item -> how its result line is written instead


class OpenAIBatchAPI:
    """Files + Batches, as documented; `expire` items are left unrun (the batch expires); the
    result lines of `mangle` items are written by their function (cut off, `null`...)."""

    def __init__(self, expire: frozenset[int] = frozenset(), fail: bool = False, mangle: Mangle | None = None) -> None:
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.inputs: list[list[dict[str, Any]]] = []  # the lines of each uploaded batch file
        self.retrieves = 0
        self.expire, self.fail, self.mangle = expire, fail, mangle or {}
        self.written: dict[int, str] = {}  # item -> its result line, as written last
        self.model = Model()

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if request.method == "POST" and path == "/v1/files":
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = multipart_file(request)
            self.inputs.append([json.loads(line) for line in self.files[file_id].splitlines()])
            return httpx2.Response(
                200,
                json={
                    "id": file_id,
                    "object": "file",
                    "bytes": len(self.files[file_id]),
                    "created_at": 1,
                    "filename": "batch.jsonl",
                    "purpose": "batch",
                },
            )
        if request.method == "POST" and path == "/v1/batches":
            body = json.loads(request.content)
            batch = {
                "id": f"batch_{len(self.batches) + 1}",
                "object": "batch",
                "endpoint": body["endpoint"],
                "errors": None,
                "input_file_id": body["input_file_id"],
                "completion_window": "24h",
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "created_at": 1,
                "request_counts": {"total": 0, "completed": 0, "failed": 0},
                "metadata": None,
            }
            self.batches[batch["id"]] = batch
            return httpx2.Response(200, json=batch)
        if request.method == "GET" and path.startswith("/v1/batches/"):
            self.retrieves += 1
            batch = self.batches[path.rsplit("/", 1)[1]]
            if batch["status"] == "validating":
                batch["status"] = "in_progress"  # the first poll sees it running
            elif batch["status"] == "in_progress":
                self._finish(batch)
            return httpx2.Response(200, json=batch)
        if request.method == "GET" and path.endswith("/content"):
            return httpx2.Response(200, content=self.files[path.split("/")[3]])
        return httpx2.Response(404, json={"error": {"message": f"no route {path}", "type": "invalid_request_error"}})

    def _finish(self, batch: dict[str, Any]) -> None:
        if self.fail:
            batch["status"] = "failed"
            batch["errors"] = {"object": "list", "data": [{"code": "invalid_json_line", "message": "bad line 1"}]}
            return
        output, errors = [], []
        inputs = [json.loads(x) for x in self.files[batch["input_file_id"]].splitlines()]
        items = {line["custom_id"]: item_of(line["body"]["messages"]) for line in inputs}
        for line in inputs:
            if item_of(line["body"]["messages"]) in self.expire:
                message = "This request could not be executed before the completion window expired."
                errors.append(
                    {
                        "id": "batch_req_x",
                        "custom_id": line["custom_id"],
                        "response": None,
                        "error": {"code": "batch_expired", "message": message},
                    }
                )
                continue
            tool = "tools" in line["body"]
            answer = self.model.answer(line["body"]["messages"], tool)
            if answer is None:
                body = {
                    "error": {
                        "message": "Invalid request",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": None,
                    }
                }
                errors.append(
                    {
                        "id": "batch_req_x",
                        "custom_id": line["custom_id"],
                        "response": {"status_code": 400, "request_id": "req_1", "body": body},
                        "error": None,
                    }
                )
                continue
            message: dict[str, Any] = {"role": "assistant", "content": answer}
            if tool:  # the forced tool call, as Chat Completions returns it
                call = {"name": line["body"]["tool_choice"]["function"]["name"], "arguments": answer}
                message = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "call_1", "type": "function", "function": call}],
                }
            completion = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4o-mini",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool else "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
            output.append(
                {
                    "id": "batch_req_x",
                    "custom_id": line["custom_id"],
                    "response": {"status_code": 200, "request_id": "req_1", "body": completion},
                    "error": None,
                }
            )
        for name, lines in (("output_file_id", output), ("error_file_id", errors)):
            if lines:
                file_id = f"file-{len(self.files) + 1}"
                for line in lines:
                    item = items[line["custom_id"]]
                    self.written[item] = self.mangle.get(item, json.dumps)(line)
                self.files[file_id] = "".join(self.written[items[line["custom_id"]]] + "\n" for line in lines).encode()
                batch[name] = file_id
        batch["status"] = "expired" if self.expire else "completed"


def openai_adapter(api: Callable[[httpx2.Request], httpx2.Response]) -> OpenAIChatClient:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(api))
    return OpenAIChatClient(openai.AsyncOpenAI(api_key="test", http_client=http), "gpt-4o-mini", discover=False)


async def test_openai_batch_validates_each_line_and_resubmits_the_invalid_ones(tmp_path: Path) -> None:
    api = OpenAIBatchAPI(expire=frozenset({8}))
    inputs = [(f"id{n}", f"item {n}") for n in range(1, 9)]
    output = tmp_path / "out.jsonl"
    run = extract_batch(openai_adapter(api), inputs, Row, output=output, max_retries=1, poll_interval=0)
    results = {result.id: result async for result in run}
    assert results.keys() == {f"id{n}" for n in range(1, 9)}
    for n in (1, 2, 4, 7):
        assert results[f"id{n}"].value == Row(n=n, word=f"w{n}") and len(results[f"id{n}"].attempts) == 1
    assert results["id3"].value == Row(n=3, word="w3")
    assert [a.text for a in results["id3"].attempts] == ["not json", '{"n": 3, "word": "w3"}']
    failed = results["id5"].error
    assert isinstance(failed, ModelBehaviorError)
    bad = '{"n": "not a number", "word": 1}'
    assert failed.raw_texts == ["not json", bad, bad]  # what each batch brought back
    assert isinstance(results["id6"].error, openai.BadRequestError)  # the provider's error line, typed
    expired = results["id8"].error
    assert isinstance(expired, openai.APIStatusError) and expired.status_code == 408
    assert "completion window expired" in str(expired)
    # Three batches: every item; then the second asks of the two invalid ones, as a live run would send
    # them (an answer that is not JSON at all shows the constraint was ignored: the layer moves to a
    # forced tool, which spends no re-ask); then id5's one re-ask with its validation errors
    assert len(api.batches) == 3 and [len(lines) for lines in api.inputs] == [8, 2, 1]
    first = api.inputs[0][0]
    assert first["method"] == "POST" and first["url"] == "/v1/chat/completions" and "custom_id" in first
    assert first["body"]["model"] == "gpt-4o-mini" and "stream" not in first["body"]
    assert first["body"]["response_format"]["type"] == "json_schema"  # the same strategy as a live call
    assert first["body"]["response_format"]["json_schema"]["strict"] is True
    reasked = api.inputs[1]
    assert sorted(item_of(line["body"]["messages"]) for line in reasked) == [3, 5]
    assert all(line["body"]["tool_choice"]["function"]["name"] == "Row" for line in reasked)
    assert api.retrieves >= 4  # polled until each batch ended
    summary = run.summary
    assert (summary.done, dict(summary.failed)) == (
        5,
        {"ModelBehaviorError": 1, "BadRequestError": 1, "APIStatusError": 1},
    )
    assert summary.usage == UsageDetails(90, 45, 135)
    assert summary.cost == price_of(summary.usage, "gpt-4o-mini", "openai") * Decimal("0.5")  # type: ignore[operator]
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert sorted(line["id"] for line in lines) == sorted(results)
    again = extract_batch(openai_adapter(api), inputs, Row, output=output, poll_interval=0)
    assert [r async for r in again] == [] and again.summary.skipped == 8 and len(api.batches) == 3


async def test_a_failed_openai_batch_is_a_typed_error_and_nothing_is_written(tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    run = extract_batch(openai_adapter(OpenAIBatchAPI(fail=True)), ["item 1"], Row, output=output, poll_interval=0)
    with pytest.raises(BatchJobError, match="invalid_json_line"):
        async for _ in run:
            pass
    assert output.read_text() == ""


async def test_batch_size_splits_items_into_several_batches() -> None:
    api = OpenAIBatchAPI()
    run = extract_batch(openai_adapter(api), [f"item {n}" for n in (1, 2, 4, 7, 9)], Row, batch_size=2, poll_interval=0)
    values = sorted(r.value.n for r in [r async for r in run] if r.value is not None)
    assert values == [1, 2, 4, 7, 9] and [len(lines) for lines in api.inputs] == [2, 2, 1]


class AnthropicBatchAPI:
    """Message Batches, as documented: create, retrieve (in_progress, then ended), results JSONL;
    the result lines of `mangle` items are written by their function."""

    def __init__(self, mangle: Mangle | None = None) -> None:
        self.created: list[list[dict[str, Any]]] = []
        self.status: dict[str, str] = {}
        self.retrieves = 0
        self.model = Model()
        self.mangle = mangle or {}
        self.written: dict[int, str] = {}  # item -> its result line, as written last

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if request.method == "POST" and path == "/v1/messages/batches":
            self.created.append(json.loads(request.content)["requests"])
            batch_id = f"msgbatch_{len(self.created)}"
            self.status[batch_id] = "in_progress"
            return httpx2.Response(200, json=self._batch(batch_id))
        batch_id = path.split("/")[4]
        if path.endswith("/results"):
            lines = []
            for request in self.created[int(batch_id.split("_")[1]) - 1]:
                item = item_of(request["params"]["messages"])
                self.written[item] = self.mangle.get(item, json.dumps)(self._result(request))
                lines.append(self.written[item])
            return httpx2.Response(200, content="".join(line + "\n" for line in lines).encode())
        self.retrieves += 1
        self.status[batch_id] = "ended"  # created in_progress; ended at the first poll
        return httpx2.Response(200, json=self._batch(batch_id))

    def _batch(self, batch_id: str) -> dict[str, Any]:
        ended = self.status[batch_id] == "ended"
        return {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": self.status[batch_id],
            "request_counts": {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
            "ended_at": "2024-09-24T18:37:24.100435Z" if ended else None,
            "created_at": "2024-09-24T18:37:24.100435Z",
            "expires_at": "2024-09-25T18:37:24.100435Z",
            "cancel_initiated_at": None,
            "archived_at": None,
            "results_url": f"https://api.anthropic.com/v1/messages/batches/{batch_id}/results" if ended else None,
        }

    def _result(self, request: dict[str, Any]) -> dict[str, Any]:
        params = request["params"]
        if item_of(params["messages"]) == 8:
            return {"custom_id": request["custom_id"], "result": {"type": "expired"}}
        tool = "tools" in params
        answer = self.model.answer(params["messages"], tool)
        if answer is None:
            error = {"type": "error", "error": {"type": "invalid_request_error", "message": "Invalid request"}}
            return {"custom_id": request["custom_id"], "result": {"type": "errored", "error": error}}
        content: dict[str, Any] = {"type": "text", "text": answer}
        if tool:
            name = params["tool_choice"]["name"]
            content = {"type": "tool_use", "id": "toolu_1", "name": name, "input": json.loads(answer)}
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": params["model"],
            "content": [content],
            "stop_reason": "tool_use" if tool else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        return {"custom_id": request["custom_id"], "result": {"type": "succeeded", "message": message}}


async def test_anthropic_message_batches_validate_and_resubmit_the_invalid_ones() -> None:
    api = AnthropicBatchAPI()
    sdk = anthropic.AsyncAnthropic(api_key="test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(api)))
    client = AnthropicChatClient(sdk, "claude-haiku-4-5")
    inputs = [(f"id{n}", f"item {n}") for n in (1, 3, 5, 6, 8)]
    run = extract_batch(client, inputs, Row, max_retries=1, poll_interval=0)
    results = {result.id: result async for result in run}
    assert results["id1"].value == Row(n=1, word="w1")
    assert results["id3"].value == Row(n=3, word="w3") and len(results["id3"].attempts) == 2
    assert isinstance(results["id5"].error, ModelBehaviorError)
    assert isinstance(results["id6"].error, anthropic.BadRequestError)
    expired = results["id8"].error
    assert isinstance(expired, anthropic.APIStatusError) and expired.status_code == 408 and "expired" in str(expired)
    assert [len(requests) for requests in api.created] == [5, 2, 1] and api.retrieves >= 3
    params = api.created[0][0]["params"]
    assert params["model"] == "claude-haiku-4-5" and params["max_tokens"] and "stream" not in params
    assert params["output_config"]["format"]["type"] == "json_schema"  # the same strategy as a live call
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", r["custom_id"]) for r in api.created[0])  # Anthropic's rule
    usage = run.summary.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (60, 30)  # 6 answers of 10 + 5


async def test_a_request_that_is_not_a_model_call_is_not_held_for_a_batch() -> None:
    from so_middleware.batch._engines import _Holding

    holding = _Holding()
    probe = httpx2.Request("GET", "https://api.openai.com/v1/models")
    response = await holding(probe)
    assert response.status_code == 404 and holding.held == {}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_server_without_a_batch_api_is_named_as_such(provider: str) -> None:
    """A local server knows no batch endpoints: llama-server answers `POST /v1/files` with its
    documented 404 body (`{"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}}`)."""
    asked: list[str] = []

    def server(request: httpx2.Request) -> httpx2.Response:
        asked.append(f"{request.method} {request.url.path}")
        body = {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}}
        return httpx2.Response(404, json=body)

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(server))
    adapter: Any
    if provider == "openai":
        sdk: Any = openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:8080/v1", http_client=http)
        adapter, request = OpenAIChatClient(sdk, "m", discover=False), "POST /v1/files"
    else:
        sdk = anthropic.AsyncAnthropic(api_key="k", base_url="http://127.0.0.1:8080", http_client=http)
        adapter, request = AnthropicChatClient(sdk, "m", discover=False), "POST /v1/messages/batches"
    run = extract_batch(adapter, ["item 1", "item 2"], Row, poll_interval=0)
    with pytest.raises(BatchJobError) as failed:
        [result async for result in run]
    assert "the server at http://127.0.0.1:8080" in str(failed.value)
    assert f"has no batch API ({request} answered 404): use the direct engine there" in str(failed.value)
    assert asked == [request]


def test_the_engines_need_an_async_provider_adapter() -> None:
    from so_middleware.testing import FakeChatClient

    with pytest.raises(UserError, match="async SDK client"):
        extract_batch(FakeChatClient("x"), ["item 1"], Row)
    with pytest.raises(UserError, match="async SDK client"):
        extract_batch(OpenAIChatClient(openai.OpenAI(api_key="test"), "m"), ["item 1"], Row)


# ------------------------------------------------------------------ unreadable result lines


def without(key: str) -> Callable[[dict[str, Any]], str]:
    return lambda line: json.dumps({k: v for k, v in line.items() if k != key})


def cut_off(line: dict[str, Any]) -> str:
    return json.dumps(line)[:80]  # a file cut in the middle of a line: its custom_id is still there


def with_line_separator(line: dict[str, Any]) -> str:
    """A valid line whose answer holds U+2028 unescaped, as JSON allows (not a line break in JSONL)."""
    return json.dumps(line, ensure_ascii=False).replace("w11", "w\u2028 11")


async def test_an_unreadable_openai_result_line_fails_its_own_item_and_every_good_line_is_written(
    tmp_path: Path,
) -> None:
    no_status = {2: cut_off, 4: lambda line: "null", 7: without("custom_id"), 11: with_line_separator}
    mangle: Mangle = {**no_status, 9: lambda line: json.dumps({**line, "response": {"body": {}}})}
    api = OpenAIBatchAPI(mangle=mangle)
    inputs = [(f"id{n}", f"item {n}") for n in (1, 2, 4, 7, 9, 10, 11)]
    output = tmp_path / "out.jsonl"
    run = extract_batch(openai_adapter(api), inputs, Row, output=output, poll_interval=0)
    results = {result.id: result async for result in run}
    assert results["id1"].value == Row(n=1, word="w1") and results["id10"].value == Row(n=10, word="w10")
    assert results["id11"].value == Row(n=11, word="w\u2028 11")
    written = {record["id"]: record for record in map(json.loads, output.read_text().splitlines())}
    assert written.keys() == results.keys()  # every item ended once, in the file too
    lines = api.written
    for n in (2, 9):  # a line that names its request: that item's own error, the line kept
        error = results[f"id{n}"].error
        assert isinstance(error, openai.InternalServerError) and error.status_code == 502
        assert error.code == "batch_unreadable_line" and error.body["raw_lines"] == [lines[n]]  # type: ignore[index]
        assert written[f"id{n}"]["error"]["raw_lines"] == [lines[n]]
    assert "not JSON" in str(results["id2"].error) and "no status_code" in str(results["id9"].error)
    # `null` and a line without custom_id name no request: kept once, in the summary; their items fail
    assert run.summary.unattributed_lines == [lines[4], lines[7]]
    for n in (4, 7):
        error = results[f"id{n}"].error
        assert isinstance(error, openai.InternalServerError) and error.status_code == 502
        assert "2 line(s) that name no request" in str(error) and "summary.unattributed_lines" in str(error)
    assert "2 batch result line(s) named no request" in str(run.summary)
    assert (run.summary.done, dict(run.summary.failed)) == (3, {"InternalServerError": 4})
    assert len(api.batches) == 1  # an unreadable line is not asked again (and paid again)


async def test_an_unreadable_anthropic_result_line_fails_its_own_item_and_every_good_line_is_written(
    tmp_path: Path,
) -> None:
    def no_message(line: dict[str, Any]) -> str:
        return json.dumps({"custom_id": line["custom_id"], "result": {"type": "succeeded"}})

    def unknown_type(line: dict[str, Any]) -> str:
        return json.dumps({"custom_id": line["custom_id"], "result": {"type": "pending"}})

    mangle: Mangle = {2: cut_off, 4: lambda line: "null", 7: without("custom_id"), 9: no_message, 10: unknown_type}
    api = AnthropicBatchAPI(mangle=mangle)
    sdk = anthropic.AsyncAnthropic(api_key="test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(api)))
    output = tmp_path / "out.jsonl"
    inputs = [(f"id{n}", f"item {n}") for n in (1, 2, 4, 7, 9, 10)]
    run = extract_batch(AnthropicChatClient(sdk, "claude-haiku-4-5"), inputs, Row, output=output, poll_interval=0)
    results = {result.id: result async for result in run}
    assert results["id1"].value == Row(n=1, word="w1")
    written = {record["id"]: record for record in map(json.loads, output.read_text().splitlines())}
    assert written.keys() == results.keys() == {f"id{n}" for n in (1, 2, 4, 7, 9, 10)}
    for n in (2, 9, 10):
        error = results[f"id{n}"].error
        assert isinstance(error, anthropic.InternalServerError) and error.status_code == 502
        assert error.body["error"]["raw_lines"] == [api.written[n]]  # type: ignore[index]
        assert written[f"id{n}"]["error"]["raw_lines"] == [api.written[n]]
    assert run.summary.unattributed_lines == [api.written[4], api.written[7]]
    for n in (4, 7):
        error = results[f"id{n}"].error
        assert isinstance(error, anthropic.InternalServerError) and "summary.unattributed_lines" in str(error)
    assert [len(requests) for requests in api.created] == [6]  # nothing asked (and paid for) again


def test_the_cli_prints_the_unattributed_lines_of_a_batch(capsys: pytest.CaptureFixture[str]) -> None:
    from so_middleware.batch import BatchSummary
    from so_middleware.batch._cli import _report

    summary = BatchSummary(done=1, unattributed_lines=["null", '{"response": {}}'])
    _report(summary, Path("out.jsonl"))
    err = capsys.readouterr().err
    assert "2 batch result line(s) named no request" in err and "results in out.jsonl" in err
    assert "unattributed batch result line: null" in err and 'line: {"response": {}}' in err


def provider_error(line: dict[str, Any]) -> str:
    body = {"error": {"message": "Invalid request", "type": "invalid_request_error", "param": None, "code": None}}
    return json.dumps({**line, "response": {"status_code": 400, "request_id": "req_1", "body": body}})


@pytest.mark.parametrize(
    ("second_line", "error_type"), [(cut_off, openai.InternalServerError), (provider_error, openai.BadRequestError)]
)
async def test_an_item_whose_reask_fails_keeps_its_paid_first_answer(
    tmp_path: Path, second_line: Callable[[dict[str, Any]], str], error_type: type[Exception]
) -> None:
    written = Counter[str]()

    def fail_the_second_time(line: dict[str, Any]) -> str:
        written["item 3"] += 1
        return json.dumps(line) if written["item 3"] == 1 else second_line(line)

    api = OpenAIBatchAPI(mangle={3: fail_the_second_time})
    output = tmp_path / "out.jsonl"
    run = extract_batch(openai_adapter(api), [("id3", "item 3")], Row, output=output, max_retries=1, poll_interval=0)
    [result] = [r async for r in run]
    assert isinstance(result.error, error_type) and len(api.batches) == 2
    assert [a.text for a in result.attempts] == ["not json"]  # the first batch's answer, paid for
    assert result.usage == UsageDetails(10, 5, 15)
    [record] = [json.loads(line) for line in output.read_text().splitlines()]
    assert [a["text"] for a in record["attempts"]] == ["not json"] and record["usage"]["output_tokens"] == 5


def with_a_lone_surrogate(line: dict[str, Any]) -> str:
    """The answer `{"n": 11, "word": "w\\ud83d"}`: half an emoji, as a model can write it (escaped, valid JSON)."""
    message = line["response"]["body"]["choices"][0]["message"]
    message["content"] = message["content"].replace("w11", "w\ud83d")
    return json.dumps(line)


async def test_an_answer_with_a_lone_surrogate_reaches_its_item(tmp_path: Path) -> None:
    api = OpenAIBatchAPI(mangle={11: with_a_lone_surrogate})
    output = tmp_path / "out.jsonl"
    run = extract_batch(openai_adapter(api), [("id11", "item 11")], Row, output=output, max_retries=0, poll_interval=0)
    [result] = [r async for r in run]
    # handed to the layer as the provider wrote it (what the layer then makes of it is its own affair)
    assert result.attempts[0].text == '{"n": 11, "word": "w\ud83d"}'
    [record] = [json.loads(line) for line in output.read_text().splitlines()]
    assert record["attempts"][0]["text"] == '{"n": 11, "word": "w\ud83d"}'


async def test_a_failed_poll_is_a_transport_error_of_the_sdks_type() -> None:
    """`GET /v1/batches/{id}` answered with OpenAI's documented server error body: the run ends
    with the `ProviderStatusError` the adapters raise (also `openai.InternalServerError`)."""
    api = OpenAIBatchAPI()
    server_error = {
        "error": {"message": "The server had an error", "type": "server_error", "param": None, "code": None}
    }

    def failing_polls(request: httpx2.Request) -> httpx2.Response:
        if request.method == "GET" and request.url.path.startswith("/v1/batches/"):
            return httpx2.Response(500, json=server_error, headers={"x-should-retry": "false"})
        return api(request)

    run = extract_batch(openai_adapter(failing_polls), ["item 1"], Row, poll_interval=0)
    with pytest.raises(openai.InternalServerError) as failed:
        [result async for result in run]

    assert isinstance(failed.value, ProviderStatusError) and failed.value.status_code == 500
    assert isinstance(failed.value.__cause__, openai.InternalServerError) and not failed.value.transient
    assert failed.value.url is not None and failed.value.url.endswith("/v1/batches/batch_1")
