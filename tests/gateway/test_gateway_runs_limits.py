"""Bounds on what clients can make the gateway do: background runs are a bounded queue (a 429 with
`retry-after` past it), and a client that hangs up stops its backend call, whatever the phase."""

from __future__ import annotations

import json
import logging
import socket
import time
from typing import Any

import httpx2
import pytest
from fakes import sdk

from so_middleware.gateway._logs import ACCESS_LOGGER
from so_middleware.gateway._runs import RETRY_AFTER


def _wait(condition: Any, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition did not hold in time")
        time.sleep(0.05)


def test_background_runs_are_a_bounded_queue(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway(max_background_runs=2, max_queued_runs=1)
    backend.chunk_delay, backend.pieces = 0.2, 200
    client = sdk(gateway)
    running = [client.responses.create(model="m", input="hi", background=True) for _ in range(2)]
    waiting = client.responses.create(model="m", input="hi", background=True)
    _wait(lambda: backend.open_streams == 2)
    refused = httpx2.post(f"{gateway.base_url}/responses", json={"model": "m", "input": "hi", "background": True},
                          timeout=10)  # fmt: skip
    assert refused.status_code == 429 and refused.headers["retry-after"] == str(RETRY_AFTER) == "2"  # as documented
    error = refused.json()["error"]
    assert error["code"] == "too_many_background_runs" and error["type"] == "rate_limit_error"
    assert client.responses.retrieve(waiting.id).status == "queued" and len(backend.raw_bodies) == 2
    client.responses.cancel(running[0].id)  # a slot frees: the queued run starts
    _wait(lambda: client.responses.retrieve(waiting.id).status == "in_progress")
    assert len(backend.raw_bodies) == 3
    # a run cancelled while queued never reaches the backend, and frees its place in the queue
    queued = client.responses.create(model="m", input="hi", background=True)
    assert client.responses.cancel(queued.id).status == "cancelled"
    assert client.responses.create(model="m", input="hi", background=True).status == "queued"
    assert len(backend.raw_bodies) == 3
    client.close()


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [("max_background_runs", 0, "must be a positive number, got 0"),
     ("max_queued_runs", -1, "must be a whole number of 0 or more, got -1")],
)  # fmt: skip
def test_the_limits_must_be_positive(name: str, value: int, message: str) -> None:
    from so_middleware import UserError
    from so_middleware.gateway import GatewayConfig

    with pytest.raises(UserError, match=f"{name} {message}"):
        GatewayConfig(backend_url="http://127.0.0.1:1/v1", **{name: value})


def test_a_client_that_hangs_up_stops_the_backend_call(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway(max_attempts=3)
    backend.chunk_delay, backend.pieces = 0.2, 200  # 40 s of answer
    body = json.dumps({"model": "m", "input": "hi", "stream": True}).encode()  # a plain request is a plain call
    with socket.create_connection((gateway.host, gateway.port), timeout=10) as raw:
        raw.sendall(b"POST /v1/responses HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip
        _wait(lambda: backend.open_streams == 1)
    _wait(lambda: backend.streams_closed_early == 1)  # the backend saw its stream closed, not finished
    assert backend.streams_finished == 0 and len(backend.raw_bodies) == 1  # and no retry was made


def test_a_client_that_hangs_up_on_a_plain_request_stops_the_backend_call(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway(max_attempts=3)
    backend.plain_delay = 40.0
    body = json.dumps({"model": "m", "input": "hi"}).encode()
    with socket.create_connection((gateway.host, gateway.port), timeout=10) as raw:
        raw.sendall(b"POST /v1/responses HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip
        _wait(lambda: len(backend.raw_bodies) == 1)
    _wait(lambda: backend.plain_abandoned == 1)  # the backend saw its caller go, not a finished answer
    assert len(backend.raw_bodies) == 1  # and no retry was made


@pytest.mark.parametrize("phase", ["headers", "first_byte"])
def test_a_client_that_hangs_up_before_the_backends_first_byte_stops_the_backend_call(
    fake_gateway: Any, phase: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    backend, gateway = fake_gateway(max_attempts=3)
    if phase == "headers":
        backend.header_delay = 120.0
    else:
        backend.first_byte_delay = 120.0
    body = json.dumps({"model": "m", "input": "hi", "stream": True}).encode()
    with socket.create_connection((gateway.host, gateway.port), timeout=10) as raw:
        raw.sendall(b"POST /v1/responses HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip
        _wait(lambda: len(backend.raw_bodies) == 1 and (phase == "headers" or backend.open_streams == 1))
    # the backend saw its caller go, long before it would have answered
    _wait(lambda: backend.headers_abandoned == 1 if phase == "headers" else backend.streams_closed_early == 1, 20)
    assert len(backend.raw_bodies) == 1 and backend.streams_finished == 0  # and no retry was made
    _wait(lambda: any(r.name == ACCESS_LOGGER for r in caplog.records))
    assert [r.status for r in caplog.records if r.name == ACCESS_LOGGER] == [499]  # type: ignore[attr-defined]


def test_a_client_that_hangs_up_on_the_model_list_stops_the_backend_call(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    backend.models_delay = 120.0
    with socket.create_connection((gateway.host, gateway.port), timeout=10) as raw:
        raw.sendall(b"GET /v1/models HTTP/1.1\r\nhost: gw\r\n\r\n")
        _wait(lambda: backend.models_asked == 1)
    _wait(lambda: backend.models_abandoned == 1, 20)  # the backend saw its caller go


def test_the_documented_defaults() -> None:
    from so_middleware.gateway import GatewayConfig
    from so_middleware.gateway._cli import parser
    from so_middleware.gateway._request import MAX_DEPTH
    from so_middleware.gateway._watch import FINISH_WINDOW

    assert (MAX_DEPTH, FINISH_WINDOW) == (64, 3.0)  # docs/how-to/gateway.md's "64 levels" and "3 s to finish"

    args = parser().parse_args([])
    assert (args.max_background_runs, args.max_queued_runs) == (8, 64)
    config = GatewayConfig(backend_url="x")
    assert (config.max_background_runs, config.max_queued_runs) == (8, 64)
    args = parser().parse_args(["--max-background-runs", "2", "--max-queued-runs", "0"])
    assert (args.max_background_runs, args.max_queued_runs) == (2, 0)
