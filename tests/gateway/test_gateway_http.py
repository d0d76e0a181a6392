"""The gateway as an HTTP server: request translation, output items, errors, keys and limits,
against a recording fake Chat Completions backend on loopback (the fake answers in the documented
Chat Completions wire format; errors and tool calls on demand are why it is a fake)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest
from fakes import running_background, sdk
from openai.types.responses import ResponseUsage

import so_middleware


def _post(url: str, body: Any, *, raw: bytes | None = None, **kwargs: Any) -> httpx2.Response:
    content = raw if raw is not None else json.dumps(body).encode()
    return httpx2.post(f"{url}/responses", content=content, timeout=30,
                       headers={"content-type": "application/json", **kwargs.pop("headers", {})}, **kwargs)  # fmt: skip


def test_request_fields_are_translated(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    tool = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}, "strict": True}
    body = {
        "model": "m", "instructions": "Be brief.", "temperature": 0.2, "top_p": 0.9, "max_output_tokens": 33,
        "tools": [tool], "tool_choice": {"type": "function", "name": "lookup"}, "parallel_tool_calls": False,
        "user": "u1", "reasoning": {"effort": "low"}, "metadata": {"k": "v"}, "top_k": 40,
        "input": [
            {"type": "message", "role": "developer", "content": "Use tools."},
            {"role": "user", "content": [{"type": "input_text", "text": "Who is Ada?"}]},
            {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{\"q\": \"Ada\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "a mathematician"},
        ],
    }  # fmt: skip
    reply = _post(gateway.base_url, body)
    assert reply.status_code == 200, reply.text
    sent = backend.bodies[-1]
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Who is Ada?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": \"Ada\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a mathematician"},
    ]  # fmt: skip
    assert sent["tools"] == [{"type": "function", "function": {"name": "lookup", "parameters": tool["parameters"],
                                                               "strict": True}}]  # fmt: skip
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"]) == (0.2, 0.9, 33)
    assert (sent["parallel_tool_calls"], sent["user"], sent["reasoning_effort"]) == (False, "u1", "low")
    assert sent["top_k"] == 40  # a field the Responses API does not know is forwarded (passthrough)
    assert "metadata" not in sent and "instructions" not in sent
    response = reply.json()
    assert response["metadata"] == {"k": "v"} and response["instructions"] == "Be brief."


def test_output_message_and_usage(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    response = _post(gateway.base_url, {"model": "m", "input": "hi"}).json()
    assert response["object"] == "response" and response["status"] == "completed"
    [message] = response["output"]
    assert message["type"] == "message" and message["role"] == "assistant" and message["status"] == "completed"
    assert message["content"] == [
        {"type": "output_text", "text": '{"name": "Ada Lovelace", "age": 36}', "annotations": []}
    ]
    assert response["usage"] == {"input_tokens": 11, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                                 "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 0},
                                 "total_tokens": 18}  # fmt: skip
    # what the SDK's own model requires (it reads answers without validating; a strict reader would not)
    assert ResponseUsage.model_validate(response["usage"]).input_tokens == 11


@pytest.mark.parametrize("stream", [False, True])
def test_function_calls_become_function_call_items(fake_gateway: Any, stream: bool) -> None:
    backend, gateway = fake_gateway()
    backend.tool_call = {"name": "lookup", "arguments": '{"q": "Ada"}'}
    client = sdk(gateway)
    tools: Any = [{"type": "function", "name": "lookup", "parameters": {"type": "object"}, "strict": False}]
    if stream:
        with client.responses.stream(model="m", input="look Ada up", tools=tools) as events:
            kinds = [event.type for event in events]
            response = events.get_final_response()
        assert "response.function_call_arguments.delta" in kinds and "response.function_call_arguments.done" in kinds
    else:
        response = client.responses.create(model="m", input="look Ada up", tools=tools)
    [call] = response.output
    assert call.type == "function_call" and call.call_id == "call_1" and call.name == "lookup"
    assert call.arguments == '{"q": "Ada"}' and call.id.startswith("fc_")
    client.close()


def test_a_length_finish_is_incomplete_when_streaming(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    backend.finish_reason = "length"
    client = sdk(gateway)
    events = list(client.responses.create(model="m", input="hi", stream=True))
    assert events[-1].type == "response.incomplete"
    response = events[-1].response
    assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"
    assert response.output[0].status == "incomplete"
    client.close()


@pytest.mark.parametrize("stream", [False, True])
def test_backend_errors_are_forwarded_with_status_and_body(fake_gateway: Any, stream: bool) -> None:
    backend, gateway = fake_gateway()
    error = {"error": {"message": "response_format is not supported", "type": "invalid_request_error",
                       "param": "response_format", "code": "unsupported"}}  # fmt: skip
    backend.error = (422, error)
    reply = _post(gateway.base_url, {"model": "m", "input": "hi", "stream": stream,
                                     "text": {"format": {"type": "json_object"}}})  # fmt: skip
    assert reply.status_code == 422
    assert reply.json() == error


def test_backend_error_reaches_the_sdk_as_its_typed_error(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    backend.error = (
        400,
        {"error": {"message": "bad schema", "type": "invalid_request_error", "param": None, "code": None}},
    )
    client = sdk(gateway)
    with pytest.raises(openai.BadRequestError, match="bad schema"):
        client.responses.create(model="m", input="hi")
    client.close()


def test_an_unreachable_backend_is_a_502() -> None:
    from so_middleware.gateway import GatewayConfig, create_app
    from so_middleware.gateway._server import AppServer, free_port

    port = free_port()
    app = create_app(GatewayConfig(backend_url=f"http://127.0.0.1:{port}/internal/v1", max_attempts=1))
    with AppServer(app) as gateway:
        reply = _post(gateway.base_url, {"model": "m", "input": "hi"})
    assert reply.status_code == 502 and reply.json()["error"]["code"] == "backend_unreachable"
    assert str(port) not in reply.text and "/internal" not in reply.text  # the backend's address is not the client's


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m", "input": "hi", "temperature": "hot"}, "temperature"),
        ({"model": "m", "input": "hi", "max_output_tokens": 1.5}, "max_output_tokens"),
        ({"model": "m", "input": "hi", "stream": "yes"}, "stream"),
        ({"model": 3, "input": "hi"}, "model"),
        ({"model": "m"}, "input"),
        ({"model": "m", "input": 7}, "input"),
        ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
        ({"model": "m", "input": [{"type": "web_search_call"}]}, "input[0].type"),
        ({"model": "m", "input": "hi", "text": {"format": {"kind": "json"}}}, "text.format.type"),
        ({"model": "m", "input": "hi", "tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"model": "m", "input": "hi", "tool_choice": 5}, "tool_choice"),
    ],
)
def test_wrong_types_are_a_400_naming_the_field(fake_gateway: Any, body: dict[str, Any], param: str) -> None:
    backend, gateway = fake_gateway()
    reply = _post(gateway.base_url, body)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert (
        error["param"] == param and error["type"] == "invalid_request_error" and param.split("[")[0] in error["message"]
    )
    assert backend.raw_bodies == []  # refused before any backend call


def test_malformed_json_is_a_400(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    reply = _post(gateway.base_url, None, raw=b'{"model": "m", "input": ')
    assert reply.status_code == 400 and "not valid JSON" in reply.json()["error"]["message"]
    assert _post(gateway.base_url, ["a list"]).status_code == 400


def test_a_body_over_the_limit_is_a_413(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway(max_body_bytes=1000)
    big = {"model": "m", "input": "x" * 2000}
    assert _post(gateway.base_url, big).status_code == 413

    def chunks() -> Any:  # no content-length: the limit holds on the bytes read
        yield json.dumps(big).encode()

    reply = httpx2.post(f"{gateway.base_url}/responses", content=chunks(), timeout=30)
    assert reply.status_code == 413 and reply.json()["error"]["code"] == "body_too_large"
    assert _post(gateway.base_url, {"model": "m", "input": "small"}).status_code == 200
    assert len(backend.raw_bodies) == 1


def test_api_keys(fake_gateway: Any) -> None:
    _, gateway = fake_gateway(api_keys=("key-one", "key-two"))
    assert _post(gateway.base_url, {"model": "m", "input": "hi"}).status_code == 401
    wrong = _post(gateway.base_url, {"model": "m", "input": "hi"}, headers={"authorization": "Bearer key-on"})
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_api_key"
    for key in ("key-one", "key-two"):
        client = openai.OpenAI(base_url=gateway.base_url, api_key=key, max_retries=0)
        assert client.responses.create(model="m", input="hi").status == "completed"
        client.close()
    health = httpx2.get(f"{gateway.root_url}/health").json()  # health needs no key
    assert health == {"status": "ok", "service": "so-middleware-gateway", "version": so_middleware.__version__}


def test_models_come_from_the_backend(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    client = sdk(gateway)
    assert [model.id for model in client.models.list()] == ["fake-model"]
    client.close()


def test_a_stream_broken_mid_way_fails_the_response(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    backend.break_after, backend.pieces = 2, 6
    client = sdk(gateway)
    events = list(client.responses.create(model="m", input="hi", stream=True))
    assert events[-1].type == "response.failed"
    failed = events[-1].response
    assert failed.status == "failed" and failed.error is not None and "broke off" in failed.error.message
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta")  # what came is kept
    assert client.responses.retrieve(failed.id).status == "failed"
    client.close()


def test_delete_stops_a_running_background_response(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    client = sdk(gateway)
    started = running_background(client, backend)
    client.responses.delete(started.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(started.id)
    assert backend.streams_closed_early == 1
    client.close()


def test_ids_are_stable_across_a_stream_and_retrieve(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    client = sdk(gateway)
    events = list(client.responses.create(model="m", input="hi", stream=True))
    final = events[-1].response
    assert {e.response.id for e in events if hasattr(e, "response")} == {final.id}
    item_id = final.output[0].id
    assert {
        getattr(e, "item_id", None) or e.item.id for e in events if hasattr(e, "item_id") or hasattr(e, "item")
    } == {item_id}
    assert client.responses.retrieve(final.id).output[0].id == item_id
    client.close()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_backend_reasoning_becomes_a_reasoning_item(fake_gateway: Any, stream: bool) -> None:
    backend, gateway = fake_gateway()
    backend.reasoning = "Ada is named; 36 is her age."
    client = sdk(gateway)
    if stream:
        events = list(client.responses.create(model="m", input="hi", stream=True))
        kinds = [e.type for e in events]
        assert kinds.count("response.reasoning_text.delta") == 2 and "response.reasoning_text.done" in kinds
        assert kinds.index("response.reasoning_text.done") < kinds.index("response.output_text.delta")
        assert "response.reasoning.delta" not in kinds  # the spec's name, sent only when asked for (test_gateway_spec)
        response = events[-1].response
    else:
        response = client.responses.create(model="m", input="hi")
    reasoning, message = response.output
    assert reasoning.type == "reasoning" and reasoning.id.startswith("rs_")
    assert reasoning.content is not None and reasoning.content[0].text == backend.reasoning
    assert message.type == "message" and response.output_text == backend.text
    client.close()
