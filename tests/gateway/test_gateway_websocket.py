"""WebSocket mode of `/v1/responses` over a real uvicorn socket, with the `websockets` client: turns,
`store: false` continuation on the socket, the spec's error envelopes, keys and tenants, bounds,
idle and age limits, and the close on shutdown."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from so_middleware.gateway._server import AppServer

KEYS = ["key-one", "key-two"]


def url(server: AppServer) -> str:
    return f"ws://{server.host}:{server.port}/v1/responses"


def socket(server: AppServer, key: str | None = KEYS[0]) -> ClientConnection:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return connect(url(server), additional_headers=headers, open_timeout=10)


def create(ws: ClientConnection, **fields: Any) -> list[dict[str, Any]]:
    """Send one `response.create`; the events up to its terminal event or its error envelope."""
    ws.send(json.dumps({"type": "response.create", "model": "fake-model", **fields}))
    events: list[dict[str, Any]] = []
    while True:
        event = json.loads(ws.recv(timeout=30))
        events.append(event)
        if event["type"] in ("response.completed", "response.failed", "response.incomplete", "error"):
            return events


@pytest.fixture
def gateway(fake_gateway: Callable[..., Any]) -> Iterator[Callable[..., Any]]:
    def make(**config: Any) -> Any:
        config.setdefault("api_keys", KEYS)
        return fake_gateway(**config)

    yield make


def test_a_turn_streams_the_http_events_and_ends_completed(gateway: Callable[..., Any]) -> None:
    backend, server = gateway()
    backend.text = "first"
    with socket(server) as ws:
        events = create(ws, input="Say first")
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "first"
    assert backend.bodies[-1]["stream"] is True


def test_turns_on_one_socket_run_one_after_another(gateway: Callable[..., Any]) -> None:
    backend, server = gateway()
    backend.replies = ["one", "two"]
    with socket(server) as ws:  # both sent at once: the second waits for the first to end
        ws.send(json.dumps({"type": "response.create", "model": "m", "store": False, "input": "1"}))
        ws.send(json.dumps({"type": "response.create", "model": "m", "store": False, "input": "2"}))
        kinds: list[dict[str, Any]] = []
        while sum(e["type"] == "response.completed" for e in kinds) < 2:
            kinds.append(json.loads(ws.recv(timeout=30)))
    ends = [e for e in kinds if e["type"] == "response.completed"]
    assert [e["response"]["output"][0]["content"][0]["text"] for e in ends] == ["one", "two"]
    first_end = kinds.index(ends[0])  # nothing of the second before the first ended
    assert all(e["response"]["id"] != ends[0]["response"]["id"] for e in kinds[first_end + 1 :] if "response" in e)
    assert all(e.get("response", ends[0]["response"])["id"] == ends[0]["response"]["id"] for e in kinds[:first_end])


def test_store_false_continues_on_its_socket_with_the_history(gateway: Callable[..., Any]) -> None:
    backend, server = gateway()
    backend.replies = ["OK", "cobalt"]
    with socket(server) as ws:
        first = create(ws, store=False, input="Remember: cobalt.")[-1]["response"]
        second = create(ws, store=False, previous_response_id=first["id"], input="The word?")[-1]
    assert second["type"] == "response.completed"
    sent = [(m["role"], m["content"]) for m in backend.bodies[-1]["messages"]]
    assert sent == [("user", "Remember: cobalt."), ("assistant", "OK"), ("user", "The word?")]


def test_an_unknown_previous_response_is_previous_response_not_found(gateway: Callable[..., Any]) -> None:
    backend, server = gateway()
    with socket(server) as ws:
        error = create(ws, store=False, previous_response_id="resp_missing", input="hi")[-1]
        assert error == {"type": "error", "status": 400, "error": {
            "message": "Previous response with id 'resp_missing' not found.", "type": "invalid_request_error",
            "param": "previous_response_id", "code": "previous_response_not_found"}}  # fmt: skip
        assert create(ws, input="still open")[-1]["type"] == "response.completed"
    assert len(backend.bodies) == 1  # the refused turn never reached the backend


def test_a_store_false_response_is_gone_after_a_reconnect(gateway: Callable[..., Any]) -> None:
    _, server = gateway()
    with socket(server) as ws:
        first = create(ws, store=False, input="hi")[-1]["response"]
    with socket(server) as ws:
        error = create(ws, store=False, previous_response_id=first["id"], input="again")[-1]
    assert error["error"]["code"] == "previous_response_not_found"


def test_a_stored_response_continues_on_another_socket_of_its_key_only(gateway: Callable[..., Any]) -> None:
    backend, server = gateway()
    with socket(server) as ws:
        first = create(ws, store=True, input="hi")[-1]["response"]
    with socket(server) as ws:
        assert create(ws, previous_response_id=first["id"], input="again")[-1]["type"] == "response.completed"
    with socket(server, KEYS[1]) as ws:  # another key's socket never sees it
        assert create(ws, previous_response_id=first["id"], input="x")[-1]["error"]["code"] == (
            "previous_response_not_found"
        )
    assert len(backend.bodies) == 2


def test_an_item_reference_resolves_to_its_keys_stored_item_only(gateway: Callable[..., Any]) -> None:
    backend, server = gateway()
    backend.replies = ["stored answer"]
    with socket(server) as ws:
        item = create(ws, store=True, input="hi")[-1]["response"]["output"][0]
        reference = [{"type": "item_reference", "id": item["id"]}, {"type": "message", "role": "user", "content": "x"}]
        assert create(ws, input=reference)[-1]["type"] == "response.completed"
    assert [m["content"] for m in backend.bodies[-1]["messages"]] == ["stored answer", "x"]
    with socket(server, KEYS[1]) as ws:
        refused = create(ws, input=reference)[-1]
    assert (refused["status"], refused["error"]["param"]) == (400, "input[0].id")
    assert len(backend.bodies) == 2


def test_a_failed_continuation_forgets_the_response_it_continued(gateway: Callable[..., Any]) -> None:
    backend, server = gateway()
    with socket(server) as ws:
        first = create(ws, store=False, input="hi")[-1]["response"]
        output = {"type": "function_call_output", "call_id": "call_none", "output": "x"}
        failed = create(ws, store=False, previous_response_id=first["id"], input=[output])[-1]
        assert failed["status"] == 400 and failed["error"]["param"] == "input[0].call_id"
        retry = create(ws, store=False, previous_response_id=first["id"], input="again")[-1]
    assert retry["error"]["code"] == "previous_response_not_found"
    assert len(backend.bodies) == 1


def test_a_backend_refusal_is_an_error_envelope_with_its_status(gateway: Callable[..., Any]) -> None:
    backend, server = gateway()
    backend.error = (400, {"error": {"message": "context too long", "type": "invalid_request_error"}})
    with socket(server) as ws:
        error = create(ws, input="hi")[-1]
    assert error["type"] == "error" and error["status"] == 400 and error["error"]["message"] == "context too long"


@pytest.mark.parametrize(
    ("message", "param"),
    [
        ("not json", None),
        (json.dumps({"type": "response.cancel"}), "type"),
        (json.dumps({"type": "response.create", "model": "m", "input": "hi", "stream": True}), "stream"),
        (json.dumps({"type": "response.create", "model": "m", "input": "hi", "background": True}), "background"),
        (json.dumps({"type": "response.create", "model": "m", "input": 3}), "input"),
    ],
)
def test_a_bad_message_is_a_400_naming_the_field_and_the_socket_stays(
    gateway: Callable[..., Any], message: str, param: str | None
) -> None:
    backend, server = gateway()
    with socket(server) as ws:
        ws.send(message)
        error = json.loads(ws.recv(timeout=30))
        assert error["type"] == "error" and error["status"] == 400 and error["error"]["param"] == param
        assert create(ws, input="hi")[-1]["type"] == "response.completed"
    assert len(backend.bodies) == 1


def test_a_socket_needs_a_key_as_http_does(gateway: Callable[..., Any]) -> None:
    _, server = gateway()
    for key in (None, "wrong"):
        with pytest.raises(InvalidStatus) as refused:
            socket(server, key)
        assert refused.value.response.status_code == 401


def test_sockets_are_bounded_per_key_and_in_all(gateway: Callable[..., Any]) -> None:
    _, server = gateway(max_websockets=2, max_websockets_per_key=1)
    with socket(server, KEYS[0]) as first:
        with pytest.raises(InvalidStatus) as refused:
            socket(server, KEYS[0])
        assert refused.value.response.status_code == 429
        with socket(server, KEYS[1]):
            with pytest.raises(InvalidStatus) as full:
                socket(server, KEYS[1])
            assert full.value.response.status_code == 429
        assert create(first, input="hi")[-1]["type"] == "response.completed"
    _wait(lambda: _admitted(server))  # a closed socket frees its place


def _admitted(server: AppServer) -> bool:
    try:
        socket(server).close()
    except InvalidStatus:
        return False
    return True


def test_a_socket_outlives_the_header_deadline_of_its_upgrade(gateway: Callable[..., Any]) -> None:
    _, server = gateway(header_timeout=0.3)
    with socket(server) as ws:
        time.sleep(1)  # past the deadline the upgrade's HTTP connection had for its next request
        assert create(ws, input="hi")[-1]["type"] == "response.completed"


def test_an_idle_socket_is_closed(gateway: Callable[..., Any]) -> None:
    _, server = gateway(websocket_idle_timeout=0.3)
    with socket(server) as ws:
        assert create(ws, input="hi")[-1]["type"] == "response.completed"
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
    assert closed.value.rcvd is not None and (closed.value.rcvd.code, closed.value.rcvd.reason) == (
        1000,
        "idle timeout",
    )


def test_a_socket_past_its_age_gets_the_spec_error_and_closes(gateway: Callable[..., Any]) -> None:
    backend, server = gateway(websocket_max_age=0.5)
    backend.chunk_delay = 0.2  # the turn in progress when the limit comes ends with it
    with socket(server) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
        events = []
        with pytest.raises(ConnectionClosed):
            while True:
                events.append(json.loads(ws.recv(timeout=30)))
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["code"] == "websocket_connection_limit_reached"
    _wait(lambda: backend.streams_closed_early == 1)  # the backend call stopped with the socket


def test_a_client_gone_mid_turn_stops_the_backend_call(gateway: Callable[..., Any]) -> None:
    backend, server = gateway()
    backend.chunk_delay = 60  # the next piece comes long after the wait below: only the hang-up can end it
    with socket(server) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
        _wait(lambda: backend.open_streams == 1)
    _wait(lambda: backend.streams_closed_early == 1)
    assert backend.streams_finished == 0


def test_shutdown_closes_open_sockets_with_service_restart(gateway: Callable[..., Any]) -> None:
    _, server = gateway()
    with socket(server) as ws:
        assert create(ws, input="hi")[-1]["type"] == "response.completed"
        server.stop()
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1012


def _wait(condition: Callable[[], bool], within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true"
        time.sleep(0.02)


def test_the_openai_sdk_websocket_client_runs_a_store_false_chain(gateway: Callable[..., Any]) -> None:
    """The pinned SDK's own Responses WebSocket client (`client.responses.connect()`), unmodified."""
    backend, server = gateway()
    backend.replies = ["OK", "cobalt"]
    client = openai.OpenAI(base_url=server.base_url, api_key=KEYS[0], max_retries=0)
    ends: list[Any] = []
    with client.responses.connect() as connection:
        for step in range(2):
            previous = {"previous_response_id": ends[-1].response.id} if ends else {}
            connection.response.create(model="fake-model", input=f"turn {step}", store=False, **previous)
            for event in connection:
                if event.type in ("response.completed", "error"):
                    ends.append(event)
                    break
    assert [end.type for end in ends] == ["response.completed"] * 2
    assert ends[1].response.output_text == "cobalt"
    assert [m["content"] for m in backend.bodies[-1]["messages"]] == ["turn 0", "OK", "turn 1"]


def test_a_lone_surrogate_from_the_backend_reaches_the_socket_as_json(gateway: Callable[..., Any]) -> None:
    """A backend's text may hold a lone surrogate (an escape JSON allows, UTF-8 cannot carry): each
    event is still sent as one valid text frame, and the turn completes."""
    backend, server = gateway()
    backend.text = "broken \ud800 half"
    with socket(server) as ws:
        events = create(ws, input="Say it")
        assert events[-1]["type"] == "response.completed"
        text = events[-1]["response"]["output"][0]["content"][0]["text"]
        assert text.startswith("broken ") and text.endswith(" half")
        assert create(ws, input="Again")[-1]["type"] == "response.completed"  # the socket still serves
