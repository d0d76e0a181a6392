"""Background mode: `background: true` returns at once, the run goes on in the gateway, `GET`
polls it, `cancel` stops it (closing the backend stream), `GET ?stream=true&starting_after=N`
resumes its event stream. With the unmodified OpenAI SDK."""

from __future__ import annotations

import time
from typing import Any

import openai
import pytest
from fakes import running_background, sdk

MODEL = "smollm2"


def _poll(client: openai.OpenAI, response_id: str, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        response = client.responses.retrieve(response_id)
        if response.status not in ("queued", "in_progress") or time.monotonic() > deadline:
            return response
        time.sleep(0.2)


@pytest.mark.local_server
def test_background_polling_reaches_completed_on_the_local_model(gateway_sdk: openai.OpenAI) -> None:
    started = gateway_sdk.responses.create(model=MODEL, input="Say hello.", background=True, max_output_tokens=20)
    assert started.status == "queued" and started.background is True and started.output == []
    final = _poll(gateway_sdk, started.id)
    assert final.status in ("completed", "incomplete") and final.output_text
    assert final.id == started.id


@pytest.mark.local_server
def test_cancel_stops_a_run_on_the_local_model(gateway_sdk: openai.OpenAI) -> None:
    started = gateway_sdk.responses.create(model=MODEL, input="Count from 1 to 1000, one number a line.",
                                           background=True, max_output_tokens=2000)  # fmt: skip
    while gateway_sdk.responses.retrieve(started.id).status == "queued":
        time.sleep(0.05)
    cancelled = gateway_sdk.responses.cancel(started.id)
    assert cancelled.status == "cancelled"
    time.sleep(0.5)
    assert gateway_sdk.responses.retrieve(started.id).status == "cancelled"  # it stays cancelled


def test_cancel_closes_the_backend_stream(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    client = sdk(gateway)
    started = running_background(client, backend)
    assert client.responses.cancel(started.id).status == "cancelled"
    deadline = time.monotonic() + 10
    while backend.streams_closed_early == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (backend.streams_closed_early, backend.streams_finished) == (1, 0)
    # a finished background response is returned as it is
    done = _poll(client, client.responses.create(model="m", input="hi", background=True).id)
    assert done.status == "completed" and client.responses.cancel(done.id).status == "completed"
    # as the API documents, only responses created with background=true can be cancelled
    plain = client.responses.create(model="m", input="hi", store=True)
    with pytest.raises(openai.BadRequestError, match="background"):
        client.responses.cancel(plain.id)
    client.close()


def test_a_cancelled_run_says_so_before_its_followers_see_it_end(fake_gateway: Any, monkeypatch: Any) -> None:
    """A stream following the run ends when the run stops; a poll right then must read `cancelled`."""
    from so_middleware.gateway._runs import ResponseRun

    status_when_ended: list[str] = []
    notify = ResponseRun.notify

    async def recording(self: ResponseRun) -> None:
        if self.finished:
            status_when_ended.append(self.response["status"])
        await notify(self)

    monkeypatch.setattr(ResponseRun, "notify", recording)
    backend, gateway = fake_gateway()
    backend.chunk_delay, backend.pieces = 0.2, 50
    client = sdk(gateway)
    started = client.responses.create(model="m", input="hi", background=True)
    assert client.responses.cancel(started.id).status == "cancelled"
    assert status_when_ended and set(status_when_ended) == {"cancelled"}
    client.close()


def test_resume_the_event_stream_from_a_sequence_number(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    backend.chunk_delay, backend.pieces = 0.05, 10
    client = sdk(gateway)
    started = client.responses.create(model="m", input="hi", background=True)
    resumed = list(client.responses.retrieve(started.id, stream=True, starting_after=3))
    numbers = [event.sequence_number for event in resumed]
    assert numbers == list(range(4, 4 + len(numbers)))
    assert resumed[-1].type == "response.completed"
    whole = list(client.responses.retrieve(started.id, stream=True))
    assert [e.sequence_number for e in whole] == list(range(len(whole))) and whole[0].type == "response.created"
    assert "".join(e.delta for e in whole if e.type == "response.output_text.delta") == backend.text
    client.close()


def test_background_with_stream_streams_the_run(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    client = sdk(gateway)
    events = list(client.responses.create(model="m", input="hi", background=True, stream=True))
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    assert client.responses.retrieve(events[-1].response.id).status == "completed"
    client.close()


def test_a_backend_error_fails_the_background_response(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    backend.error = (400, {"error": {"message": "no such model", "type": "invalid_request_error", "param": None,
                                     "code": None}})  # fmt: skip
    client = sdk(gateway)
    started = client.responses.create(model="m", input="hi", background=True)
    final = _poll(client, started.id, timeout=10)
    assert final.status == "failed" and "no such model" in final.error.message
    client.close()
