"""Connections are bounded: past `max_connections` a connection is answered 503 and closed, a request
whose headers stall is closed after `header_timeout`, one whose body stalls is answered 408 after
`body_timeout`; so idle half-open requests (slowloris) cannot starve the gateway of sockets. Raw
loopback sockets, each read bounded by a socket timeout."""

from __future__ import annotations

import socket
from typing import Any

import openai

PARTIAL_HEADERS = b"POST /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"


def _connect(server: Any, send: bytes = b"") -> socket.socket:
    sock = socket.create_connection((server.host, server.port), timeout=30)  # every read below ends by then
    if send:
        sock.sendall(send)
    return sock


def _read_until_closed(sock: socket.socket) -> bytes:
    """What the gateway sent before it closed the connection (a reset counts as closed)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    finally:
        sock.close()
    return received


def test_idle_half_open_requests_are_capped_then_closed(fake_gateway: Any) -> None:
    _, gateway = fake_gateway(max_connections=4, header_timeout=2.0)
    stalled = [_connect(gateway, PARTIAL_HEADERS) for _ in range(12)]  # 3 times the cap, all half-sent
    one_more = _connect(gateway)
    busy = _read_until_closed(one_more)  # answered at once, not held: its socket is free again
    assert busy.startswith(b"HTTP/1.1 503 ") and b'"code": "too_many_connections"' in busy
    # the half-sent requests are all closed: those past the cap at once (503, or a reset when the
    # kernel drops the answer for the unread request bytes), the others at their header deadline
    answers = [_read_until_closed(sock) for sock in stalled]
    assert all(answer == b"" or answer.startswith(b"HTTP/1.1 503 ") for answer in answers), answers
    assert answers.count(b"") >= 4  # the 4 held ones, closed without an answer to a request never finished
    client = openai.OpenAI(base_url=gateway.base_url, api_key="none", max_retries=0, timeout=30)
    assert client.responses.create(model="m", input="hi").status == "completed"  # served again
    client.close()


def test_a_kept_alive_connection_whose_next_headers_stall_is_closed(fake_gateway: Any) -> None:
    _, gateway = fake_gateway(header_timeout=1.0)
    sock = _connect(gateway, b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):  # the whole small JSON answer
        chunk = sock.recv(65536)
        assert chunk, answer
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 ")
    sock.sendall(PARTIAL_HEADERS)  # the next request starts (uvicorn's keep-alive timer stops) and stalls
    assert _read_until_closed(sock) == b""


def test_a_stalled_body_is_answered_408(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway(body_timeout=1.0)
    sock = _connect(gateway, PARTIAL_HEADERS + b'content-length: 100\r\n\r\n{"model": "m", ')
    answer = _read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 408 ") and b'"code":"request_timeout"' in answer
    assert b"connection: close" in answer.lower()  # the rest of its body will not be read: closed now
    assert backend.raw_bodies == []


def test_a_request_slower_than_the_header_timeout_is_not_cut(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway(header_timeout=0.5)
    backend.chunk_delay, backend.pieces = 0.2, 5  # the answer streams for about a second
    client = openai.OpenAI(base_url=gateway.base_url, api_key="none", max_retries=0, timeout=30)
    for _ in range(2):  # on one keep-alive connection: the second request's headers come in time again
        events = list(client.responses.create(model="m", input="hi", stream=True))
        assert events[-1].type == "response.completed"
    client.close()
