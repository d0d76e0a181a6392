"""Background (long-running) runs over the documented OpenAI wire shapes.

The OpenAI background-mode states (`queued`, `in_progress`, `completed`, `cancelled`, `failed`),
a 5xx on a background create and a resumable event stream cannot be produced on demand by the
local model, so these tests answer with `httpx2.MockTransport`, with bodies from the documented
Responses API wire format (provider-apis.md §2.3-2.4: `status`, `error`, stream events with
`sequence_number`; `GET /v1/responses/{id}?stream=true&starting_after=N`; `POST .../cancel`).
The same behaviour against the real gateway over the local model is in
tests/gateway/test_gateway_background_client.py.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import anyio
import httpx2
import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from pydantic import BaseModel

from so_middleware import (
    ChatOptions,
    ContinuationToken,
    DeadlineExceededError,
    DelegatingChatClient,
    FinishReason,
    LayerCall,
    ModelBehaviorError,
    ProviderResponseError,
    StreamInterruptedError,
    UserError,
    cancel_run,
    wait_for_response,
    with_cache,
    with_options,
    with_retries,
    with_structured_output,
    with_telemetry,
)
from so_middleware.openai import OPENAI_API, OpenAIChatClient, OpenAIResponsesClient

pytestmark = pytest.mark.anyio


class Person(BaseModel):
    name: str
    age: int


def response(status: str, text: str | None = None, **changes: Any) -> dict[str, Any]:
    output = []
    if text is not None:
        content = [{"type": "output_text", "text": text, "annotations": []}]
        output = [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": content}]
    body = {
        "id": "resp_bg",
        "object": "response",
        "created_at": 1,
        "model": "gpt-4o",
        "status": status,
        "background": True,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15} if status == "completed" else None,
    }
    return {**body, **changes}


FAILED = response("failed", error={"code": "server_error", "message": "The model crashed."})


class Server:
    """A scripted Responses API: `create` answers the first body, each poll the next state."""

    def __init__(self, create: Any, polls: list[Any] | None = None) -> None:
        self.create, self.polls = create, list(polls or [])
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if request.method == "POST" and request.url.path.endswith("/cancel"):
            return httpx2.Response(200, json=response("cancelled"))
        answer = self.create if request.method == "POST" else self.polls.pop(0)
        if isinstance(answer, int):
            return httpx2.Response(answer, json={"error": {"message": "boom", "type": "server_error"}})
        if isinstance(answer, bytes):
            return httpx2.Response(200, content=answer, headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, json=answer)

    def calls(self, method: str) -> list[httpx2.Request]:
        return [r for r in self.requests if r.method == method]


def client_over(server: Callable[[httpx2.Request], httpx2.Response], **sdk_options: Any) -> OpenAIResponsesClient:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(server))
    sdk = openai.AsyncOpenAI(api_key="x", base_url="http://mock/v1", http_client=http, **sdk_options)
    return OpenAIResponsesClient(sdk, "gpt-4o", capabilities=OPENAI_API)


# ---------------------------------------------------------------- the token


def test_token_round_trips_through_its_string() -> None:
    token = ContinuationToken("resp_1", 41, trace="00-" + "a" * 32 + "-" + "b" * 16 + "-01")
    text = str(token)
    assert text.isascii() and ContinuationToken.parse(text) == token
    assert ContinuationToken.coerce(text) == token and ContinuationToken.coerce(token) is token
    assert ChatOptions.coerce({"continuation_token": text}).continuation_token == token


@pytest.mark.parametrize("bad", ["resp_1", "somw1.%%%", "somw1.bnVsbA", 5])
def test_a_damaged_token_is_a_user_error(bad: Any) -> None:
    with pytest.raises(UserError, match=r"continuation.token"):
        ContinuationToken.coerce(bad)


def token_text(fields: dict[str, Any]) -> str:
    """A token string as `str(token)` writes it, with any fields (the format is public: base64 JSON)."""
    return "somw1." + base64.urlsafe_b64encode(json.dumps(fields).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "response_id",
    [".", "..", "a/b", "../responses", "a\\b", "a\x00b", "a\nb", "a\ud83d", "a?b", "a#b", "%2e%2e"],
    ids=[
        "dot",
        "dotdot",
        "slash",
        "parent",
        "backslash",
        "nul",
        "newline",
        "surrogate",
        "query",
        "fragment",
        "percent",
    ],
)
async def test_a_token_id_that_could_name_another_resource_is_refused(response_id: str) -> None:
    """Before: "." and ".." went into `/responses/{id}` (another URL), a lone surrogate raised
    UnicodeEncodeError from the SDK."""
    server = Server(response("completed", "hi"))
    client = client_over(server)
    with pytest.raises(UserError, match="response id"):
        ContinuationToken(response_id)
    with pytest.raises(UserError, match="response id"):
        ContinuationToken.parse(token_text({"id": response_id}))
    for stream in (False, True):
        with pytest.raises(UserError, match="response id"):
            await client.get_response(continuation_token=token_text({"id": response_id}), stream=stream)
    assert server.requests == []


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_run_id_from_the_server_that_no_token_can_hold_is_the_servers_fault(stream: bool) -> None:
    """Before: a UserError (blaming the caller) for the id the server gave its run."""
    created = response("queued", id="../admin")
    event = {"type": "response.created", "sequence_number": 0, "response": created}
    answer = f"event: response.created\ndata: {json.dumps(event)}\n\n".encode()
    client = client_over(Server(answer if stream else created))
    with pytest.raises(ProviderResponseError, match="no continuation token can hold"):
        if stream:
            await client.get_response("hi", options={"background": True}, stream=True).get_final_response()
        else:
            await client.get_response("hi", options={"background": True})


@pytest.mark.parametrize(
    "trace", [5, ["00-a-b-01"], {"a": 1}, "not a traceparent"], ids=["int", "list", "dict", "text"]
)
async def test_a_token_trace_that_is_not_a_traceparent_is_refused_naming_the_field(trace: Any) -> None:
    """Before: `trace: 5` under with_telemetry raised AttributeError ('int' has no 'split')."""
    server = Server(response("completed", "hi"))
    client = with_telemetry(client_over(server), tracer_provider=TracerProvider())
    with pytest.raises(UserError, match="trace"):
        await client.get_response(continuation_token=token_text({"id": "resp_bg", "trace": trace}))
    assert server.requests == []


# ---------------------------------------------------------------- create, poll, statuses


async def test_create_answers_at_once_with_a_token_then_polls_reach_completed() -> None:
    server = Server(response("queued"), [response("in_progress"), response("completed", "hello")])
    client = client_over(server)
    started = await client.get_response("hi", options={"background": True})
    assert json.loads(server.requests[0].content)["background"] is True
    assert started.finish_reason == FinishReason.LONG_RUNNING and started.text == ""
    assert started.continuation_token == ContinuationToken("resp_bg")
    assert started.additional_properties["status"] == "queued"
    with pytest.raises(UserError, match="still going"):
        _ = started.value
    polled = await client.get_response(continuation_token=started.continuation_token)
    assert polled.finish_reason == FinishReason.LONG_RUNNING and polled.continuation_token is not None
    assert polled.additional_properties["status"] == "in_progress"
    done = await client.get_response(continuation_token=str(polled.continuation_token))
    assert (done.text, done.finish_reason, done.continuation_token) == ("hello", FinishReason.STOP, None)
    assert done.usage is not None and done.usage.total_tokens == 15
    assert [(r.method, r.url.path) for r in server.requests[1:]] == [("GET", "/v1/responses/resp_bg")] * 2


@pytest.mark.parametrize(
    ("state", "code"), [(FAILED, "server_error"), (response("cancelled"), "cancelled")], ids=["failed", "cancelled"]
)
async def test_a_failed_or_cancelled_run_raises_on_poll(state: dict[str, Any], code: str) -> None:
    client = client_over(Server(response("queued"), [state]))
    with pytest.raises(ProviderResponseError, match=state["status"]) as caught:
        await client.get_response(continuation_token="somw1.eyJpZCI6InJlc3BfYmcifQ")
    assert caught.value.code == code
    assert not caught.value.transient or code == "server_error"


async def test_cancel_posts_to_the_cancel_endpoint_and_returns_the_status() -> None:
    server = Server(response("queued"))
    client = with_structured_output(client_over(server))  # found through the layers
    assert await cancel_run(client, ContinuationToken("resp_bg")) == "cancelled"
    assert [(r.method, r.url.path) for r in server.requests] == [("POST", "/v1/responses/resp_bg/cancel")]


async def test_a_run_done_at_once_comes_back_as_usual() -> None:
    client = client_over(Server(response("completed", "quick")))
    done = await client.get_response("hi", options={"background": True})
    assert (done.text, done.finish_reason, done.continuation_token) == ("quick", FinishReason.STOP, None)


def test_get_response_sync_polls_with_a_token() -> None:
    client = client_over(Server(response("queued"), [response("completed", "sync")]))
    assert client.get_response_sync(continuation_token=ContinuationToken("resp_bg")).text == "sync"


# ---------------------------------------------------------------- what is refused


async def test_adapters_without_background_runs_refuse_before_any_request() -> None:
    sent: list[httpx2.Request] = []
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(lambda r: sent.append(r) or httpx2.Response(500)))
    chat = OpenAIChatClient(openai.AsyncOpenAI(api_key="x", base_url="http://mock/v1", http_client=http), "m")
    with pytest.raises(UserError, match="OpenAIChatClient has no long-running"):
        await chat.get_response("hi", options={"background": True})
    with pytest.raises(UserError, match=r"continuation.token"):
        await chat.get_response(continuation_token=ContinuationToken("resp_1"))
    with pytest.raises(UserError, match="no long-running runs to cancel"):
        await cancel_run(chat, ContinuationToken("resp_1"))
    assert sent == []


async def test_anthropic_messages_refuses_background() -> None:
    anthropic = pytest.importorskip("anthropic")
    from so_middleware.anthropic import AnthropicChatClient

    client = AnthropicChatClient(anthropic.AsyncAnthropic(api_key="x", base_url="http://mock"), "claude")
    with pytest.raises(UserError, match="AnthropicChatClient has no long-running"):
        await client.get_response("hi", options={"background": True})


async def test_empty_messages_need_a_token_and_a_token_never_starts_a_run() -> None:
    server = Server(response("queued"), [response("completed", "polled")])
    client = with_options(client_over(server), background=True)  # a default for every call
    with pytest.raises(UserError, match="no messages"):
        await client.get_response([])
    assert server.requests == []
    polled = await client.get_response(continuation_token=ContinuationToken("resp_bg"))
    assert polled.text == "polled" and [r.method for r in server.requests] == ["GET"]


async def test_background_runs_and_polls_bypass_the_cache() -> None:
    server = Server(response("queued"), [response("in_progress"), response("completed", "done")])
    client = with_cache(client_over(server))
    assert (await client.get_response("hi", options={"background": True})).continuation_token is not None
    assert (await client.get_response(continuation_token="somw1.eyJpZCI6InJlc3BfYmcifQ")).text == ""
    assert (await client.get_response(continuation_token="somw1.eyJpZCI6InJlc3BfYmcifQ")).text == "done"


# ---------------------------------------------------------------- retries


async def test_a_background_create_is_sent_once_even_under_retries() -> None:
    server = Server(500)
    client = with_retries(client_over(server, max_retries=2), max_attempts=4, base_delay=0)
    with pytest.raises(openai.InternalServerError):
        await client.get_response("hi", options={"background": True})
    assert len(server.calls("POST")) == 1  # neither the layer nor the SDK sent it again


async def test_a_background_create_is_sent_once_under_retries_over_structured_output() -> None:
    """Retries outside structured output hand their scope down to the run; a background create
    must not be retried there either."""
    server = Server(500)
    client = with_retries(with_structured_output(client_over(server, max_retries=2)), max_attempts=4, base_delay=0)
    with pytest.raises(openai.InternalServerError):
        await client.get_response("hi", output_type=Person, options={"background": True})
    assert len(server.calls("POST")) == 1


async def test_the_sdk_does_not_resend_a_background_create_either() -> None:
    server = Server(500)
    with pytest.raises(openai.InternalServerError):
        await client_over(server, max_retries=2).get_response("hi", options={"background": True})
    assert len(server.calls("POST")) == 1


async def test_polls_are_retried() -> None:
    server = Server(response("queued"), [503, response("completed", "after a retry")])
    client = with_retries(client_over(server, max_retries=0), max_attempts=3, base_delay=0)
    done = await client.get_response(continuation_token=ContinuationToken("resp_bg"))
    assert done.text == "after a retry" and len(server.calls("GET")) == 2


# ---------------------------------------------------------------- structured output


async def test_structured_output_returns_long_running_unvalidated_then_validates_the_completed_run() -> None:
    answer = '{"name": "Ada", "age": 36}'
    server = Server(response("queued"), [response("in_progress"), response("completed", answer)])
    client = with_structured_output(client_over(server))
    started = await client.get_response("Ada, 36", output_type=Person, options={"background": True})
    assert started.finish_reason == FinishReason.LONG_RUNNING and started.attempts == []
    assert started.continuation_token is not None
    done = await wait_for_response(client, started.continuation_token, output_type=Person, first_delay=0.01)
    assert done.value == Person(name="Ada", age=36)
    assert len(done.attempts) == 1 and done.usage is not None and done.usage.total_tokens == 15
    assert len(server.calls("POST")) == 1 and len(server.calls("GET")) == 2


async def test_an_invalid_background_answer_is_not_reasked() -> None:
    server = Server(response("queued"), [response("completed", '{"name": "Ada"}')])
    client = with_structured_output(client_over(server), max_retries=3)
    started = await client.get_response("Ada", output_type=Person, options={"background": True})
    with pytest.raises(ModelBehaviorError) as caught:
        await client.get_response(continuation_token=started.continuation_token, output_type=Person)
    assert len(caught.value.attempts) == 1 and caught.value.attempts[0].text == '{"name": "Ada"}'
    assert len(server.calls("POST")) == 1  # no re-ask started a second job


# ---------------------------------------------------------------- waiting


async def test_wait_gives_up_at_its_deadline_and_cancels_the_run() -> None:
    server = Server(response("queued"), [response("in_progress")] * 100)
    client = client_over(server)
    with pytest.raises(DeadlineExceededError, match=r"not done within 0\.3 s"):
        await wait_for_response(client, ContinuationToken("resp_bg"), deadline=0.3, first_delay=0.05)
    polls = len(server.calls("GET"))
    assert 2 <= polls <= 6  # backoff: 0.05, 0.075, 0.11, ...
    assert server.requests[-1].url.path == "/v1/responses/resp_bg/cancel"


async def test_a_polls_own_timeout_is_not_taken_for_the_waits_deadline() -> None:
    """A poll that fails with a `TimeoutError` of its own (a retry layer's deadline below the wait)
    is raised as it is, not as the wait's deadline, and the run is left going."""
    server = Server(response("queued"), [response("in_progress")] * 100)
    inner = client_over(server, max_retries=0)
    calls = 0

    class SlowPolls(DelegatingChatClient):
        def respond(self, call: LayerCall) -> Any:
            nonlocal calls
            calls += 1
            if calls == 2:
                raise DeadlineExceededError("the poll's own deadline", deadline=1.0)
            return super().respond(call)

    with pytest.raises(DeadlineExceededError, match="the poll's own deadline"):
        await wait_for_response(SlowPolls(inner), ContinuationToken("resp_bg"), deadline=60, first_delay=0.01)
    assert not any(request.url.path.endswith("/cancel") for request in server.requests)


async def test_a_cancelled_wait_cancels_the_run() -> None:
    server = Server(response("queued"), [response("in_progress")] * 100)
    with anyio.move_on_after(0.2):
        await wait_for_response(client_over(server), ContinuationToken("resp_bg"), first_delay=0.05)
    assert server.requests[-1].url.path == "/v1/responses/resp_bg/cancel"


# ---------------------------------------------------------------- streams


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def delta(text: str, seq: int) -> dict[str, Any]:
    return {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
            "delta": text, "logprobs": [], "sequence_number": seq}  # fmt: skip


EVENTS = [
    {"type": "response.created", "sequence_number": 0, "response": response("queued")},
    {"type": "response.in_progress", "sequence_number": 1, "response": response("in_progress")},
    delta("Hel", 2),
    delta("lo ", 3),
    delta("wor", 4),
    delta("ld", 5),
    {"type": "response.completed", "sequence_number": 6, "response": response("completed", "Hello world")},
]


async def test_a_background_stream_resumes_after_the_last_update_it_delivered() -> None:
    cut = sse(*EVENTS[:4])  # the connection drops after "lo "
    server = Server(cut, [response("in_progress"), sse(*EVENTS[4:])])  # the cut is checked with a poll
    client = client_over(server)
    first: list[str] = []
    token = None
    with pytest.raises(StreamInterruptedError):
        async for update in client.get_response("hi", options={"background": True}, stream=True):
            if update.text:
                first.append(update.text)
                token = update.continuation_token
    assert first == ["Hel", "lo "] and token == ContinuationToken("resp_bg", 3)
    resumed = client.get_response(continuation_token=token, stream=True)
    rest = [update.text async for update in resumed if update.text]
    final = await resumed.get_final_response()
    assert "".join(first + rest) == "Hello world" and rest == ["wor", "ld"]
    assert final.text == "Hello world" and final.usage is not None and final.usage.total_tokens == 15
    poll = server.calls("GET")[1]
    assert poll.url.path == "/v1/responses/resp_bg"
    assert (poll.url.params["stream"], poll.url.params["starting_after"]) == ("true", "3")


async def test_structured_output_validates_a_resumed_stream_on_the_whole_answer() -> None:
    answer = '{"name": "Ada", "age": 36}'
    events = [*EVENTS[:2], delta(answer[:10], 2), delta(answer[10:], 3)]
    events.append({"type": "response.completed", "sequence_number": 4, "response": response("completed", answer)})
    server = Server(sse(*events[:3]), [response("in_progress"), sse(*events[3:])])
    client = with_structured_output(client_over(server))
    token = None
    with pytest.raises(StreamInterruptedError):
        async for update in client.get_response("Ada", output_type=Person, options={"background": True}, stream=True):
            token = update.continuation_token or token
    assert token == ContinuationToken("resp_bg", 2)
    resumed = client.get_response(continuation_token=token, output_type=Person, stream=True)
    final = await resumed.get_final_response()
    assert final.value == Person(name="Ada", age=36) and len(final.attempts) == 1
    assert len(server.calls("POST")) == 1


async def test_a_stream_that_ends_because_the_run_was_cancelled_says_so() -> None:
    """The API sends no event for a cancel: the stream just ends; a poll tells why."""
    server = Server(sse(*EVENTS[:3]), [response("cancelled")])
    with pytest.raises(ProviderResponseError, match="cancelled") as caught:
        async for _ in client_over(server).get_response("hi", options={"background": True}, stream=True):
            pass
    assert caught.value.code == "cancelled" and isinstance(caught.value.__cause__, StreamInterruptedError)


async def test_a_stream_cut_while_the_run_goes_on_stays_interrupted() -> None:
    server = Server(sse(*EVENTS[:3]), [response("in_progress")])
    with pytest.raises(StreamInterruptedError):
        async for _ in client_over(server).get_response("hi", options={"background": True}, stream=True):
            pass


# ---------------------------------------------------------------- telemetry


@pytest.mark.parametrize("stream", [False, True], ids=["poll", "resume"])
async def test_each_poll_is_a_span_linked_to_the_span_that_started_the_run(stream: bool) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from so_middleware import with_telemetry

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    later = sse(*EVENTS) if stream else response("completed", "done")
    server = Server(response("queued"), [response("in_progress"), later])
    client = with_telemetry(client_over(server), tracer_provider=provider)
    started = await client.get_response("hi", options={"background": True})
    assert started.continuation_token is not None and started.continuation_token.trace is not None
    token = ContinuationToken.parse(str(started.continuation_token))  # as another process would get it
    polled = await client.get_response(continuation_token=token)
    assert polled.continuation_token is not None and polled.continuation_token.trace == token.trace
    if stream:
        await client.get_response(continuation_token=polled.continuation_token, stream=True).get_final_response()
    else:
        await client.get_response(continuation_token=polled.continuation_token)
    first, *polls = exporter.get_finished_spans()
    assert len(polls) == 2 and first.context is not None
    for span in polls:
        assert [(link.context.span_id, dict(link.attributes or {})) for link in span.links] == [
            (first.context.span_id, {"so_middleware.link.kind": "background_run"})
        ]
    assert not first.links


# ---------------------------------------------------------------- agents


async def test_an_agent_run_in_the_background_continues_with_its_token() -> None:
    from so_middleware import AgentThread, ChatAgent

    answer = '{"name": "Ada", "age": 36}'
    server = Server(response("queued"), [response("in_progress"), response("completed", answer)])
    agent = ChatAgent(with_structured_output(client_over(server)), name="extractor", options={"background": True})
    thread = AgentThread()
    started = await agent.run("Ada, 36", thread=thread, output_type=Person)
    assert started.finish_reason == FinishReason.LONG_RUNNING and started.text == "" and started.messages == []
    assert started.continuation_token is not None and [m.text for m in thread.messages] == ["Ada, 36"]
    again = await agent.run(thread=thread, output_type=Person, continuation_token=started.continuation_token)
    assert again.finish_reason == FinishReason.LONG_RUNNING and len(thread) == 1
    done = await agent.run(thread=thread, output_type=Person, continuation_token=str(again.continuation_token))
    assert done.value == Person(name="Ada", age=36) and done.continuation_token is None
    assert [m.text for m in thread.messages] == ["Ada, 36", answer]
    assert len(server.calls("POST")) == 1 and "input" not in server.calls("GET")[0].url.params


async def test_an_agent_resumes_a_background_stream() -> None:
    from so_middleware import ChatAgent

    server = Server(sse(*EVENTS[:4]), [response("in_progress"), sse(*EVENTS[4:])])
    agent = ChatAgent(client_over(server))
    token = None
    with pytest.raises(StreamInterruptedError):
        async for update in agent.run("hi", options={"background": True}, stream=True):
            token = update.continuation_token or token
    resumed = agent.run(continuation_token=token, stream=True)
    rest = [update.text async for update in resumed if update.text]
    assert rest == ["wor", "ld"] and (await resumed.get_final_response()).text == "Hello world"


# ---------------------------------------------------------------- the docs' example


async def test_the_long_running_runs_example() -> None:
    """docs/how-to/background-runs.md, line by line, over the documented wire shapes."""
    answer = '{"name": "Ada", "age": 36}'
    server = Server(
        response("queued"), [response("in_progress"), response("in_progress"), response("completed", answer)]
    )
    client = with_structured_output(client_over(server))
    started = await client.get_response("Ada is 36.", output_type=Person, options={"background": True})
    assert started.finish_reason == FinishReason.LONG_RUNNING and started.attempts == []
    token = str(started.continuation_token)
    polled = await client.get_response(continuation_token=token, output_type=Person)
    assert polled.finish_reason == FinishReason.LONG_RUNNING
    done = await wait_for_response(client, token, output_type=Person, deadline=300, first_delay=0.01)
    assert done.value == Person(name="Ada", age=36) and len(done.attempts) == 1
    assert await client.cancel(token) == "cancelled"  # type: ignore[attr-defined]


async def test_a_wait_may_leave_the_run_going() -> None:
    server = Server(response("queued"), [response("in_progress")] * 100)
    with pytest.raises(DeadlineExceededError):
        await wait_for_response(
            client_over(server), ContinuationToken("resp_bg"), deadline=0.2, first_delay=0.05, cancel_on_exit=False
        )
    assert server.calls("POST") == []


async def test_background_in_extra_body_is_a_background_run_too() -> None:
    """The issue's case: `background` passed through `extra_body` once came back with no finish
    reason, and the structured-output layer re-asked, starting more jobs."""
    server = Server(response("queued"))
    client = with_retries(with_structured_output(client_over(server, max_retries=2)), base_delay=0)
    started = await client.get_response("Ada", output_type=Person, options={"extra_body": {"background": True}})
    assert started.finish_reason == FinishReason.LONG_RUNNING and started.continuation_token is not None
    assert json.loads(server.requests[0].content)["background"] is True and len(server.requests) == 1
    failing = Server(500)
    client = with_retries(client_over(failing, max_retries=2), base_delay=0)
    with pytest.raises(openai.InternalServerError):
        await client.get_response("hi", options={"extra_body": {"background": True}})
    assert len(failing.calls("POST")) == 1


async def test_a_structured_output_agent_converts_once_the_background_run_completes() -> None:
    from so_middleware import ChatAgent, StructuredOutputAgent
    from so_middleware.testing import FakeChatClient

    server = Server(response("queued"), [response("completed", "Ada Lovelace is 36.")])
    converter = FakeChatClient('{"name": "Ada Lovelace", "age": 36}')
    agent = StructuredOutputAgent(ChatAgent(client_over(server)), converter, output_type=Person)
    started = await agent.run("Who?", options={"background": True})
    assert started.finish_reason == FinishReason.LONG_RUNNING and converter.calls == []
    done = await agent.run(continuation_token=started.continuation_token)
    assert done.value == Person(name="Ada Lovelace", age=36)
    assert converter.calls[0].messages[-1].text == "Ada Lovelace is 36."


async def test_background_runs_and_polls_never_fail_over() -> None:
    from so_middleware import with_fallback
    from so_middleware.testing import FakeChatClient

    other = FakeChatClient("from the fallback")
    failing = Server(500, [503])
    client = with_fallback(client_over(failing, max_retries=0), other)
    with pytest.raises(openai.InternalServerError):
        await client.get_response("hi", options={"background": True})
    with pytest.raises(openai.InternalServerError):
        await client.get_response(continuation_token=ContinuationToken("resp_bg"))
    assert other.calls == [] and len(failing.requests) == 2
    assert (await client.get_response("hi")).text == "from the fallback"  # other calls still fail over
