"""The Bedrock adapter's direct Converse path (`providers/bedrock/_direct.py`) against the public
`client.converse(**request)` of the same real boto3: the same request on the wire (URL, headers,
signature, body bytes), the same answers and errors, the same events, retries and fallbacks."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import re
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.auth
import botocore.client
import pytest
from bedrock_server import SECRET_KEY, Answer, BedrockServer, serving, text_answer
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from botocore.useragent import register_feature_id

from so_middleware import ChatMessage, DataContent, TextContent, UserError
from so_middleware.bedrock import BedrockChatClient
from so_middleware.providers.bedrock._direct import DirectConverse, RequestNotCovered

pytestmark = pytest.mark.anyio

MODEL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
ARN = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2 c3"
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ANSWER = {
    "output": {"message": {"role": "assistant", "content": [{"text": '{"name": "Ada"}'}]}},
    "stopReason": "end_turn",
    "usage": {"inputTokens": 12, "outputTokens": 5, "totalTokens": 17, "cacheReadInputTokens": 0},
    "metrics": {"latencyMs": 321},
}


def sdk_client(**config: Any) -> Any:
    settings: dict[str, Any] = {"retries": {"total_max_attempts": 1}, **config}
    region = settings.pop("region_name", "us-east-1")
    endpoint_url = settings.pop("endpoint_url", None)
    return boto3.client(
        "bedrock-runtime",
        region_name=region,
        endpoint_url=endpoint_url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key=SECRET_KEY,
        config=Config(**settings),
    )


class Wire:
    """A `before-send` handler: keeps each request as sent (URL, headers, body) and answers with
    `body` (bytes) and `status`, without a socket."""

    def __init__(self, body: Any = None, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.sent: list[tuple[str, dict[str, bytes], bytes]] = []
        self.body = json.dumps(ANSWER if body is None else body).encode() if not isinstance(body, bytes) else body
        self.status = status
        self.headers = {"x-amzn-requestid": "req-1", "content-type": "application/json", **(headers or {})}

    def __call__(self, request: Any, **_: Any) -> AWSResponse:
        self.sent.append((request.url, dict(request.headers), request.body))
        body = self.body

        class Raw:
            def stream(self, **_: Any) -> Iterator[bytes]:
                yield body

        return AWSResponse(request.url, self.status, self.headers, Raw())


@pytest.fixture
def bedrock() -> Iterator[tuple[BedrockServer, Any]]:
    with serving() as found:
        yield found


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """One signing time for every request, so two signatures of one request are equal."""
    moment = datetime.datetime(2026, 1, 2, 3, 4, 5)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: moment)


def both_ways(request: dict[str, Any], wire: Wire, **config: Any) -> tuple[Any, Any]:
    """What the public call and the direct path return for `request`, each by its own client."""
    public, direct_client = sdk_client(**config), sdk_client(**config)
    for client in (public, direct_client):
        client.meta.events.register("before-send.bedrock-runtime.Converse", wire)
    direct = DirectConverse.for_client(direct_client)
    assert direct is not None
    direct._request_dict(request)  # covered: the direct path writes it (no fallback)
    return public.converse(**request), direct.call(**request)


def _image() -> bytes:
    return b"\x89PNG\r\n\x1a\n" + bytes(range(256))


REQUESTS: dict[str, dict[str, Any]] = {
    "text": {"modelId": MODEL, "messages": [{"role": "user", "content": [{"text": "Hi \u00e9\u4e2d\U0001f600"}]}]},
    "system and inference config": {
        "modelId": MODEL,
        "messages": [{"role": "user", "content": [{"text": "x"}]}],
        "system": [{"text": "Be brief."}, {"text": "Answer in JSON."}],
        "inferenceConfig": {"maxTokens": 256, "temperature": 0.25, "topP": 1, "stopSequences": ["\n\n", "END"]},
    },
    "output config": {
        "modelId": MODEL,
        "messages": [{"role": "user", "content": [{"text": "x"}]}],
        "outputConfig": {
            "textFormat": {
                "type": "json_schema",
                "structure": {"jsonSchema": {"schema": json.dumps(SCHEMA), "name": "Person", "description": "d"}},
            }
        },
    },
    "tools, calls and results": {
        "modelId": MODEL,
        "messages": [
            {"role": "user", "content": [{"text": "weather?"}]},
            {
                "role": "assistant",
                "content": [
                    {"reasoningContent": {"reasoningText": {"text": "think", "signature": "sig"}}},
                    {"toolUse": {"toolUseId": "t1", "name": "weather", "input": {"city": "Paris", "days": 2.5}}},
                ],
            },
            {
                "role": "user",
                "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "sunny"}], "status": "success"}}],
            },
        ],
        "toolConfig": {
            "tools": [
                {"toolSpec": {"name": "weather", "description": "d", "inputSchema": {"json": SCHEMA}, "strict": True}}
            ],
            "toolChoice": {"tool": {"name": "weather"}},
        },
    },
    "image and document bytes": {
        "modelId": MODEL,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"image": {"format": "png", "source": {"bytes": _image()}}},
                    {"document": {"format": "pdf", "name": "document", "source": {"bytes": b"%PDF-1.7 \xff\x00"}}},
                    {"image": {"format": "jpeg", "source": {"s3Location": {"uri": "s3://bucket/a.jpg"}}}},
                ],
            }
        ],
    },
    "additional model fields": {
        "modelId": MODEL,
        "messages": [{"role": "user", "content": [{"text": "x"}]}],
        "additionalModelRequestFields": {"top_k": 5, "thinking": {"type": "enabled", "budget": 1.5}, "x": None},
        "additionalModelResponseFieldPaths": ["/stop_sequence"],
    },
    "an ARN model id": {"modelId": ARN, "messages": [{"role": "user", "content": [{"text": "x"}]}]},
    "tool choice any": {
        "modelId": MODEL,
        "messages": [{"role": "user", "content": [{"text": "x"}]}],
        "toolConfig": {"tools": [{"toolSpec": {"name": "f", "inputSchema": {"json": {}}}}], "toolChoice": {"any": {}}},
    },
}


def assert_sent_alike(wire: Wire) -> None:
    """The two requests `wire` saw (the public call's, then the direct path's) are the same bytes."""
    (public_url, public_headers, public_body), (url, headers, body) = wire.sent
    assert url == public_url
    assert body == public_body
    public_headers.pop("amz-sdk-invocation-id")  # a fresh uuid each call
    headers.pop("amz-sdk-invocation-id")
    assert headers == public_headers  # User-Agent (its features), Authorization (the same signature), ...


@pytest.mark.parametrize("name", REQUESTS)
def test_the_request_on_the_wire_is_the_public_calls_byte_for_byte(name: str, frozen_clock: None) -> None:
    wire = Wire()
    both_ways(REQUESTS[name], wire)
    assert_sent_alike(wire)


@pytest.mark.parametrize("name", REQUESTS)
def test_a_stream_request_on_the_wire_is_the_public_calls_byte_for_byte(name: str, frozen_clock: None) -> None:
    wire = Wire(b"", headers={"content-type": "application/vnd.amazon.eventstream"})
    public, direct_client = sdk_client(), sdk_client()
    for client in (public, direct_client):
        client.meta.events.register("before-send.bedrock-runtime.ConverseStream", wire)
    direct = DirectConverse.for_client(direct_client, "ConverseStream")
    assert direct is not None
    direct._request_dict(REQUESTS[name])  # covered: the direct path writes it (no fallback)
    answers = public.converse_stream(**REQUESTS[name]), direct.call(**REQUESTS[name])
    assert [list(answer["stream"]) for answer in answers] == [[], []]
    assert answers[1]["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert_sent_alike(wire)


def test_the_model_id_is_percent_encoded_as_botocore_encodes_it(frozen_clock: None) -> None:
    wire = Wire()
    both_ways(REQUESTS["an ARN model id"], wire)
    assert wire.sent[1][0].endswith(
        "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fa1b2%20c3/converse"
    )


def test_the_request_dict_is_the_one_botocores_serializer_makes() -> None:
    client = sdk_client()
    direct = DirectConverse.for_client(client)
    assert direct is not None
    operation = client.meta.service_model.operation_model("Converse")
    for request in REQUESTS.values():
        assert direct._request_dict(request) == client._serializer.serialize_to_request(request, operation)


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"region_name": "eu-west-3"},
        {"region_name": "us-gov-west-1", "use_fips_endpoint": True},
        {"region_name": "us-west-2", "use_dualstack_endpoint": True},
        {"endpoint_url": "https://bedrock.internal.example:8443"},
        {"endpoint_url": "http://127.0.0.1:9"},
    ],
    ids=["default", "region", "fips", "dualstack", "endpoint_url", "plain-http"],
)
def test_the_endpoint_resolved_once_is_the_one_each_public_call_gets(
    config: dict[str, Any], frozen_clock: None
) -> None:
    """Converse's ruleset takes Region, UseFIPS, UseDualStack and Endpoint, all fixed per client:
    the second and third calls replay the first's URL, signing region and user-agent features."""
    wire = Wire()
    public, direct_client = sdk_client(**config), sdk_client(**config)
    for client in (public, direct_client):
        client.meta.events.register("before-send.bedrock-runtime.Converse", wire)
    direct = DirectConverse.for_client(direct_client)
    assert direct is not None
    request = REQUESTS["text"]
    for _ in range(3):
        public.converse(**request)
        direct.call(**request)
    for (public_url, public_headers, _), (url, headers, _) in zip(wire.sent[::2], wire.sent[1::2], strict=True):
        assert url == public_url
        assert {k: v for k, v in headers.items() if k != "amz-sdk-invocation-id"} == {
            k: v for k, v in public_headers.items() if k != "amz-sdk-invocation-id"
        }


def test_the_ruleset_runs_once_and_the_features_it_registers_go_in_every_user_agent(frozen_clock: None) -> None:
    """Converse's ruleset registers no user-agent feature today (only AccountId parameters do):
    one that registers a feature on resolution gets it replayed on each call."""
    wire = Wire()
    client = sdk_client()
    client.meta.events.register("before-send.bedrock-runtime.Converse", wire)
    direct = DirectConverse.for_client(client)
    assert direct is not None
    real = direct.machinery.resolve_endpoint
    resolved: list[str] = []

    def resolving(*args: Any) -> Any:
        resolved.append("once")
        register_feature_id("RESOLVED_ACCOUNT_ID")  # user-agent code T
        return real(*args)

    direct.machinery = dataclasses.replace(direct.machinery, resolve_endpoint=resolving)
    for _ in range(3):
        direct.call(**REQUESTS["text"])
    assert resolved == ["once"]
    for _, headers, _ in wire.sent:
        metadata = next(part for part in headers["User-Agent"].split() if part.startswith(b"m/"))
        assert b"T" in metadata[2:].split(b","), headers["User-Agent"]


def test_a_plain_answer_read_by_loads_is_botocores_parsed_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f"{DirectConverse.__module__}.create_parser", None)  # the direct path reads the body itself
    public, direct = both_ways(REQUESTS["text"], Wire())
    assert direct == public
    assert direct["ResponseMetadata"]["RequestId"] == "req-1" and direct["ResponseMetadata"]["RetryAttempts"] == 0


@pytest.mark.parametrize(
    "answer",
    [
        text_answer("plain text"),
        ANSWER,
        {
            "output": {
                "message": {
                    "role": "assistant",
                    "content": [
                        {"reasoningContent": {"reasoningText": {"text": "hm", "signature": "s"}}},
                        {"toolUse": {"toolUseId": "t", "name": "f", "input": {"a": [1, 2.5, None, {"b": True}]}}},
                    ],
                }
            },
            "stopReason": "tool_use",
            "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
            "metrics": {"latencyMs": 1},
            "additionalModelResponseFields": {"stop_sequence": None},
        },
    ],
    ids=["text", "json text", "tool use and reasoning"],
)
def test_each_answer_the_stand_in_serves_reads_as_botocore_reads_it(answer: dict[str, Any]) -> None:
    with serving() as (server, public), serving() as (other, direct_client):
        server.script(Answer(answer))
        other.script(Answer(answer))
        direct = DirectConverse.for_client(direct_client)
        assert direct is not None
        expected, got = public.converse(**REQUESTS["text"]), direct.call(**REQUESTS["text"])
    for parsed in (expected, got):
        for volatile in ("RequestId", "HTTPHeaders"):
            parsed["ResponseMetadata"].pop(volatile, None)
    assert got == expected


def test_a_2xx_answer_that_is_not_json_reads_as_botocores_parser_reads_it() -> None:
    public, direct = both_ways(REQUESTS["text"], Wire(b"<html>oops</html>"))
    assert direct == public


def test_an_answer_holding_a_blob_is_read_by_botocores_parser() -> None:
    """Redacted reasoning is a blob: base64 in the JSON, bytes in botocore's answer."""
    redacted = {
        "output": {
            "message": {"role": "assistant", "content": [{"reasoningContent": {"redactedContent": "AAEC/w=="}}]}
        },
        "stopReason": "end_turn",
        "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
        "metrics": {"latencyMs": 1},
    }
    public, direct = both_ways(REQUESTS["text"], Wire(redacted))
    assert direct == public
    assert direct["output"]["message"]["content"][0]["reasoningContent"]["redactedContent"] == b"\x00\x01\x02\xff"


@pytest.mark.parametrize(
    ("status", "error_type", "headers"),
    [
        (400, "ValidationException", {}),
        (403, "AccessDeniedException", {}),
        (429, "ThrottlingException", {"retry-after": "3"}),
        (500, "InternalServerException", {}),
        (503, "ServiceUnavailableException", {"retry-after": "2"}),
        (418, "SomethingNew", {}),
    ],
)
def test_an_error_answer_raises_the_public_calls_client_error(
    status: int, error_type: str, headers: dict[str, str]
) -> None:
    body = json.dumps({"message": "it went wrong"}).encode()
    wire = Wire(body, status, {"x-amzn-ErrorType": error_type, **headers})
    raised = []
    for use_direct in (False, True):
        client = sdk_client()
        client.meta.events.register("before-send.bedrock-runtime.Converse", wire)
        call = DirectConverse.for_client(client).call if use_direct else client.converse  # type: ignore[union-attr]
        with pytest.raises(ClientError) as info:
            call(**REQUESTS["text"])
        raised.append(info.value)
    public, direct = raised
    assert type(direct) is type(public) and str(direct) == str(public)
    assert direct.operation_name == public.operation_name == "Converse"
    assert direct.response == public.response
    assert direct.response["ResponseMetadata"]["HTTPHeaders"].get("retry-after") == headers.get("retry-after")


async def test_the_adapters_error_mapping_sees_the_same_exception(bedrock: tuple[BedrockServer, Any]) -> None:
    server, sdk = bedrock
    server.script(Answer({"message": "slow down"}, status=429, error_type="ThrottlingException"))
    client = BedrockChatClient(sdk, MODEL)
    with pytest.raises(sdk.exceptions.ThrottlingException, match="slow down"):
        await client.get_response("x")


@pytest.mark.parametrize("mode", ["standard", "adaptive", "legacy"])
def test_the_clients_own_retries_retry_a_direct_call(mode: str) -> None:
    with serving(retries={"total_max_attempts": 3, "mode": mode}) as (server, sdk):
        server.script(
            Answer({"message": "busy"}, status=503, error_type="ServiceUnavailableException"),
            Answer({"message": "busy"}, status=429, error_type="ThrottlingException"),
            Answer(text_answer("third time")),
        )
        direct = DirectConverse.for_client(sdk)
        assert direct is not None
        answer = direct.call(**REQUESTS["text"])
    assert answer["output"]["message"]["content"] == [{"text": "third time"}]
    assert answer["ResponseMetadata"]["RetryAttempts"] == 2
    assert len(server.requests) == 3


def test_a_stubber_short_circuits_the_direct_path_at_before_call() -> None:
    client = sdk_client()
    direct = DirectConverse.for_client(client)
    assert direct is not None
    with Stubber(client) as stubber:
        stubber.add_response("converse", ANSWER, {"modelId": MODEL, "messages": REQUESTS["text"]["messages"]})
        stubber.add_client_error("converse", "ThrottlingException", "stubbed", 429)
        assert direct.call(**REQUESTS["text"])["output"] == ANSWER["output"]
        with pytest.raises(client.exceptions.ThrottlingException, match="stubbed"):
            direct.call(**REQUESTS["text"])
        stubber.assert_no_pending_responses()


def test_the_events_a_user_registers_see_a_direct_call(frozen_clock: None) -> None:
    client = sdk_client()
    seen: list[str] = []
    for event in ("provide-client-params", "before-parameter-build", "before-call", "request-created", "after-call"):
        client.meta.events.register(
            f"{event}.bedrock-runtime.Converse", lambda event_name, **_: seen.append(event_name)
        )
    client.meta.events.register("before-send.bedrock-runtime.Converse", Wire())
    direct = DirectConverse.for_client(client)
    assert direct is not None
    direct.call(**REQUESTS["text"])
    assert [name.split(".")[0] for name in seen] == [
        "provide-client-params",
        "before-parameter-build",
        "before-call",
        "request-created",
        "after-call",
    ]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"temperature": 1.5}, "inferenceConfig.temperature"),
        ({"extra_body": {"inferenceConfig": {"temperature": -0.1}}}, "inferenceConfig.temperature"),
        ({"extra_body": {"inferenceConfig": {"topP": 1.01}}}, "inferenceConfig.topP"),
        ({"extra_body": {"inferenceConfig": {"maxTokens": 0}}}, "inferenceConfig.maxTokens"),
        ({"stop": [f"s{i}" for i in range(2501)]}, "inferenceConfig.stopSequences"),
        ({"extra_body": {"inferenceConfig": {"stopSequences": [""]}}}, "inferenceConfig.stopSequences[]"),
        (
            {"extra_body": {"toolConfig": {"tools": [{"toolSpec": {"name": "f" * 65, "inputSchema": {"json": {}}}}]}}},
            "toolConfig.tools[].toolSpec.name",
        ),
    ],
)
def test_a_value_out_of_the_service_models_range_is_a_user_error_before_any_request(
    bedrock: tuple[BedrockServer, Any], options: dict[str, Any], field: str
) -> None:
    server, sdk = bedrock
    with pytest.raises(
        UserError, match=rf"{re.escape(field)} is .*out of the service model's range.*\(field: {re.escape(field)}\)"
    ):
        BedrockChatClient(sdk, MODEL).get_response_sync("x", options=options)
    assert server.requests == []


def test_ranges_are_read_from_the_clients_service_model() -> None:
    client = sdk_client()
    direct = DirectConverse.for_client(client)
    assert direct is not None
    inference = client.meta.service_model.operation_model("Converse").input_shape.members["inferenceConfig"]
    plan = direct.plan.members["inferenceConfig"][1].members
    for name in ("maxTokens", "temperature", "topP", "stopSequences"):
        metadata = inference.members[name].metadata
        assert (plan[name][1].low, plan[name][1].high) == (metadata.get("min"), metadata.get("max")), name


def test_ranges_are_not_checked_when_the_client_turns_validation_off() -> None:
    wire = Wire()
    client = sdk_client(parameter_validation=False)
    client.meta.events.register("before-send.bedrock-runtime.Converse", wire)
    direct = DirectConverse.for_client(client)
    assert direct is not None
    direct.call(**{**REQUESTS["text"], "inferenceConfig": {"temperature": 1.5}})
    assert json.loads(wire.sent[0][2])["inferenceConfig"] == {"temperature": 1.5}


@pytest.mark.parametrize(
    "extra",
    [
        {"notAMember": 1},
        {"inferenceConfig": {"maxTokens": "ten"}},
        {"messages": [{"role": "user", "content": [{"text": "a", "image": {"format": "png"}}]}]},
        {"messages": [{"role": "user"}]},
        {"messages": [{"role": "user", "content": [{"image": {"format": "png", "source": {"bytes": 3}}}]}]},
        {"system": "not a list"},
    ],
    ids=["unknown member", "wrong type", "two union members", "missing required", "bad blob", "str"],
)
def test_a_request_the_plan_does_not_cover_goes_through_botocore_which_refuses_it(
    bedrock: tuple[BedrockServer, Any], extra: dict[str, Any]
) -> None:
    server, sdk = bedrock
    direct = DirectConverse.for_client(sdk)
    assert direct is not None
    request = {**REQUESTS["text"], **extra}
    with pytest.raises(RequestNotCovered):
        direct._request_dict(request)
    with pytest.raises(botocore.exceptions.ParamValidationError):
        direct.call(**request)
    with pytest.raises(UserError, match="boto3 refused the request"):
        BedrockChatClient(sdk, MODEL).get_response_sync("x", options={"extra_body": extra})
    assert server.requests == []


def test_a_wrapped_make_api_call_or_converse_takes_the_public_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """An instrumentation (OpenTelemetry's botocore one wraps `BaseClient._make_api_call`) or a
    test double on `converse` keeps seeing every call."""
    original = botocore.client.BaseClient._make_api_call
    calls: list[str] = []

    def traced(self: Any, operation_name: str, params: dict[str, Any]) -> Any:
        calls.append(operation_name)
        return original(self, operation_name, params)

    client = sdk_client()
    client.meta.events.register("before-send.bedrock-runtime.Converse", Wire())
    direct = DirectConverse.for_client(client)
    assert direct is not None
    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", traced)
    direct.call(**REQUESTS["text"])
    assert calls == ["Converse"]
    monkeypatch.undo()
    monkeypatch.setattr(client, "_make_api_call", functools.partial(traced, client), raising=False)
    direct.call(**REQUESTS["text"])
    assert calls == ["Converse", "Converse"]
    monkeypatch.undo()
    public = type(client).converse

    def wrapped(self: Any, **request: Any) -> Any:
        calls.append("class")
        return public(self, **request)

    monkeypatch.setattr(type(client), "converse", wrapped)
    direct.call(**REQUESTS["text"])
    assert calls == ["Converse", "Converse", "class"]
    monkeypatch.undo()
    doubled: list[dict[str, Any]] = []

    def double(**request: Any) -> dict[str, Any]:
        doubled.append(request)
        return ANSWER

    client.converse = double
    assert direct.call(**REQUESTS["text"]) is ANSWER and doubled == [REQUESTS["text"]]


def test_a_client_whose_private_names_moved_is_served_by_the_public_call(monkeypatch: pytest.MonkeyPatch) -> None:
    client = sdk_client()
    monkeypatch.delattr(type(client._user_agent_creator), "to_string")
    assert DirectConverse.for_client(client) is None
    wire = Wire()
    client.meta.events.register("before-send.bedrock-runtime.Converse", wire)
    monkeypatch.undo()
    moved = sdk_client()
    monkeypatch.setattr(moved, "_request_signer", None)
    adapter = BedrockChatClient(moved, MODEL)
    assert adapter._converse == moved.converse


async def test_the_adapter_answers_through_the_direct_path(bedrock: tuple[BedrockServer, Any]) -> None:
    server, sdk = bedrock
    adapter = BedrockChatClient(sdk, MODEL)
    assert getattr(adapter._converse, "__self__", None).__class__ is DirectConverse
    assert getattr(adapter._converse_stream, "__self__", None).__class__ is DirectConverse
    server.script(Answer(text_answer("hello")))
    image = DataContent(b"\x89PNG", "image/png")
    response = await adapter.get_response([ChatMessage("user", [TextContent("look"), image])])
    assert response.text == "hello"
    assert server.requests[0][1]["messages"][0]["content"][1]["image"]["source"]["bytes"] == "iVBORw=="
