"""Property test: random request bodies, headers and ids against a real gateway (uvicorn on
loopback, over the recording fake backend) never get a 500 and never hang; every answer is JSON
in the OpenAI error shape, a response object, a list, or a well-formed event stream.

The bodies are JSON values biased toward the Responses fields (with values of every type, valid
shapes among them, so requests reach the backend too), raw bytes that are not JSON, odd content
types and headers. Each request has a client timeout; `max_examples` bounds the whole test."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx2
import pytest
from fakes import FakeChatBackend
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from so_middleware.gateway import GatewayConfig, create_app
from so_middleware.gateway._server import AppServer

FIELDS = ["input", "model", "text", "tools", "tool_choice", "metadata", "previous_response_id", "stream",
          "background", "store", "max_output_tokens", "instructions", "temperature", "top_p", "user",
          "reasoning", "parallel_tool_calls", "include", "top_k"]  # fmt: skip
TERMINAL_EVENTS = {"response.completed", "response.incomplete", "response.failed", "error"}

scalars = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12) | st.sampled_from(["", "m", "resp_0", "\x00", "auto", "json_schema", "function"])
)  # fmt: skip
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=12)  # fmt: skip
schemas = st.sampled_from([{"type": "object"}, {"type": "object", "properties": {"a": {"type": "string"}}}, {}, []])
formats = st.fixed_dictionaries({"type": st.sampled_from(["text", "json_schema", "json_object", "x"]) | json_values},
                                optional={"name": json_values, "schema": schemas | json_values,
                                          "strict": json_values})  # fmt: skip
items = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "developer", "tool"]) | json_values},
    optional={"type": st.sampled_from(["message", "function_call", "function_call_output", "reasoning"]),
              "content": st.text(max_size=10) | st.lists(st.fixed_dictionaries(
                  {"type": st.sampled_from(["input_text", "output_text", "input_image", "refusal"])},
                  optional={"text": json_values, "image_url": json_values, "refusal": json_values}), max_size=2),
              "call_id": json_values, "name": json_values, "arguments": json_values, "output": json_values},
)  # fmt: skip
tools = st.fixed_dictionaries({"type": st.sampled_from(["function", "web_search"]) | json_values},
                              optional={"name": json_values, "parameters": schemas | json_values,
                                        "strict": json_values, "description": json_values})  # fmt: skip
biased = {
    "model": st.just("m") | json_values,
    "input": st.text(max_size=10) | st.lists(items, max_size=3) | json_values,
    "text": st.fixed_dictionaries({}, optional={"format": formats | json_values, "verbosity": json_values}),
    "tools": st.lists(tools, max_size=2) | json_values,
    "tool_choice": st.sampled_from(["auto", "none", "required", {"type": "function", "name": "f"}]) | json_values,
    "stream": st.booleans() | json_values,
    "background": st.booleans() | json_values,
    "previous_response_id": st.sampled_from(["resp_x", "resp_" + "0" * 32]) | json_values,
}
valid = {  # well-formed values, so a good share of the requests reach the backend and stream back
    "text": st.sampled_from([{}, {"format": {"type": "text"}}, {"format": {"type": "json_object"}},
                             {"format": {"type": "json_schema", "name": "p", "strict": True,
                                         "schema": {"type": "object", "properties": {"a": {"type": "string"}}}}}]),
    "tools": st.just([{"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}}]),
    "tool_choice": st.sampled_from(["auto", "none", "required", {"type": "function", "name": "f"}]),
    "metadata": st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
    "stream": st.booleans(), "background": st.booleans(), "store": st.booleans(),
    "max_output_tokens": st.integers(1, 2**40), "instructions": st.text(max_size=10),
    "temperature": st.floats(0, 2), "top_p": st.floats(0, 1), "user": st.text(max_size=5),
    "input": st.text(max_size=10) | st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "system"]),
                                                                    "content": st.text(max_size=10)}), max_size=2),
}  # fmt: skip
valid_bodies = st.fixed_dictionaries({"model": st.just("m"), "input": st.just("hi")},
                                     optional={k: v for k, v in valid.items() if k != "input"})  # fmt: skip
bodies = st.one_of(
    valid_bodies.map(lambda body: body),  # a valid request
    st.builds(lambda body, name, value: {**body, name: value}, valid_bodies,  # with one field gone wrong
              st.sampled_from(FIELDS) | st.text(max_size=8), st.deferred(lambda: json_values)),
    st.builds(lambda fields, extra: {"model": "m", "input": "hi", **extra, **fields},  # anything goes
              st.fixed_dictionaries({}, optional={name: biased.get(name, json_values) for name in FIELDS}),
              st.dictionaries(st.text(max_size=8), json_values, max_size=2)),
)  # fmt: skip
raw_bodies = (
    bodies.map(lambda body: json.dumps(body).encode())
    | json_values.map(lambda value: json.dumps(value).encode())
    | st.binary(max_size=64)
    | st.sampled_from(
        [
            b"",
            b"{",
            b'{"model": "m", "input": "\\ud800"}',
            b'{"a": NaN}',
            b"[" * 5000,
            b"\xff\xfe{}",
            b'{"model": "m", "input": "hi", "stream": true}',
            b'{"model": "m", "input": "x"}' * 2,
        ]
    )
)
content_types = st.sampled_from(["application/json", "text/plain", "application/json; charset=utf-16", "", "x/y",
                                 "multipart/form-data; boundary=x", "application/x-www-form-urlencoded"])  # fmt: skip
header_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12)
header_values = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=20)
ids = st.text(
    st.characters(min_codepoint=32, exclude_characters="\x7f", exclude_categories=["Cs"]), max_size=12
) | st.sampled_from(["resp_0", "resp_" + "0" * 32, "%00", "..", "resp_%ff"])
queries = st.dictionaries(st.sampled_from(["stream", "starting_after", "limit", "order", "include"]),
                          st.sampled_from(["true", "1", "-3", "0", "x", "", "desc", "asc", "99999999999999999999"]),
                          max_size=3)  # fmt: skip


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    backend = FakeChatBackend(pieces=3)
    with AppServer(backend.app()) as backend_server:
        config = GatewayConfig(backend_url=backend_server.base_url, max_attempts=1, max_body_bytes=64 * 1024)
        with AppServer(create_app(config)) as server:
            yield server.base_url


def _check(reply: httpx2.Response) -> None:
    """No 500, and a body a client can read: JSON in the error shape, JSON, or an event stream."""
    assert reply.status_code < 500 or reply.status_code in (502, 504), reply.text[:500]
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        # SSE ends a line at CR or LF only (`str.splitlines` would also split JSON text at U+2028 or U+0085)
        lines = re.split(r"\r\n|\r|\n", reply.text)
        events = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
        assert events and events[-1]["type"] in TERMINAL_EVENTS, reply.text[-500:]
        return
    body = reply.json()
    if reply.status_code >= 400:
        error = body["error"]
        assert isinstance(error["message"], str) and set(error) == {"message", "type", "param", "code"}
    else:
        assert body.get("object") in ("response", "list", "response.deleted"), body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
          database=None)  # fmt: skip
@given(raw=raw_bodies, content_type=content_types, headers=st.dictionaries(header_names, header_values, max_size=3))
def test_fuzz_create(gateway: str, raw: bytes, content_type: str, headers: dict[str, str]) -> None:
    headers = {**headers, "content-type": content_type}
    headers.pop("content-length", None)
    headers.pop("transfer-encoding", None)
    headers.pop("host", None)
    _check(httpx2.post(f"{gateway}/responses", content=raw, headers=headers, timeout=20))


ROUTES = [("GET", ""), ("DELETE", ""), ("POST", "/cancel"), ("GET", "/input_items")]


@settings(max_examples=60, deadline=None, database=None)
@given(route=st.sampled_from(ROUTES), response_id=ids, params=queries)
def test_fuzz_ids_and_queries(gateway: str, route: tuple[str, str], response_id: str, params: dict[str, str]) -> None:
    method, suffix = route
    reply = httpx2.request(method, f"{gateway}/responses/{response_id}{suffix}", params=params, timeout=20)
    if reply.is_redirect:
        return  # `/v1/responses/` is redirected to `/v1/responses`, by Starlette's router
    _check(reply)
