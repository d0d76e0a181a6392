"""The Amazon Bedrock adapter under the structured-output and retries layers, through the real,
unmodified boto3 against the loopback server of `tests/providers/bedrock/bedrock_server.py` (it
names the documented wire format it speaks)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from bedrock_server import Answer, BedrockServer, serving, text_answer, text_events
from pydantic import BaseModel

from so_middleware import (
    ContentFilterError,
    IncompleteOutputError,
    as_chat_client,
    failure_of,
    with_retries,
    with_structured_output,
)
from so_middleware.bedrock import BEDROCK_NATIVE, BedrockChatClient

pytestmark = pytest.mark.anyio

CLAUDE = "us.anthropic.claude-haiku-4-5-20251001-v1:0"


class City(BaseModel):
    name: str
    population: int


@pytest.fixture
def bedrock() -> Iterator[tuple[BedrockServer, Any]]:
    with serving() as found:
        yield found


async def test_structured_output_sends_the_schema_as_a_string_and_ends_typed(
    bedrock: tuple[BedrockServer, Any],
) -> None:
    server, sdk = bedrock
    server.script(Answer(text_answer('{"name": "Oslo", "population": 709000}')))
    response = await with_structured_output(BedrockChatClient(sdk, CLAUDE)).get_response("Oslo?", output_type=City)
    assert response.value == City(name="Oslo", population=709000)
    sent = server.requests[0][1]
    definition = sent["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
    schema = json.loads(definition["schema"])  # Converse takes the schema as a JSON string
    assert schema["additionalProperties"] is False and schema["required"] == ["name", "population"]
    assert "toolConfig" not in sent


async def test_a_model_without_the_native_format_gets_a_forced_tool(bedrock: tuple[BedrockServer, Any]) -> None:
    server, sdk = bedrock
    answer = text_answer("")
    call = {"toolUseId": "t1", "name": "City", "input": {"name": "Bergen", "population": 291000}}
    answer["output"]["message"]["content"] = [{"toolUse": call}]
    answer["stopReason"] = "tool_use"
    server.script(Answer(answer))
    client = with_structured_output(BedrockChatClient(sdk, "eu.amazon.nova-pro-v1:0"))
    response = await client.get_response("Bergen?", output_type=City)
    assert response.value == City(name="Bergen", population=291000)
    sent = server.requests[0][1]
    assert "outputConfig" not in sent
    (tool,) = sent["toolConfig"]["tools"]
    assert (
        sent["toolConfig"]["toolChoice"] == {"tool": {"name": "City"}} == {"tool": {"name": tool["toolSpec"]["name"]}}
    )
    assert set(tool["toolSpec"]["inputSchema"]["json"]["properties"]) == {"name", "population"}


async def test_a_stream_gives_partial_values_and_the_typed_end(bedrock: tuple[BedrockServer, Any]) -> None:
    server, sdk = bedrock
    server.script(Answer(events=text_events(['{"name": "Tro', 'ndheim", "population": ', "212000}"])))
    stream = with_structured_output(BedrockChatClient(sdk, CLAUDE)).get_response(
        "Trondheim?", output_type=City, stream=True
    )
    partials = [update.partial_value async for update in stream if update.partial_value is not None]
    final = await stream.get_final_response()
    assert final.value == City(name="Trondheim", population=212000)
    assert partials and partials[-1] == final.value
    assert final.usage is not None and final.usage.total_tokens == 14


@pytest.mark.parametrize("stop", ["content_filtered", "guardrail_intervened"])
async def test_a_filtered_answer_is_a_typed_content_filter_end(bedrock: tuple[BedrockServer, Any], stop: str) -> None:
    server, sdk = bedrock
    server.script(Answer(text_answer('{"name": "Os', stop=stop)))
    with pytest.raises(ContentFilterError):
        await with_structured_output(BedrockChatClient(sdk, CLAUDE)).get_response("Oslo?", output_type=City)


async def test_an_answer_cut_at_max_tokens_is_incomplete(bedrock: tuple[BedrockServer, Any]) -> None:
    server, sdk = bedrock
    server.script(Answer(text_answer('{"name": "Os', stop="max_tokens")))
    with pytest.raises(IncompleteOutputError):
        await with_structured_output(BedrockChatClient(sdk, CLAUDE)).get_response("Oslo?", output_type=City)


async def test_throttling_is_retried_by_the_retries_layer_after_its_retry_after(
    bedrock: tuple[BedrockServer, Any],
) -> None:
    server, sdk = bedrock
    busy = Answer(
        {"message": "Too many requests"}, status=429, error_type="ThrottlingException", headers={"retry-after": "0"}
    )
    server.script(busy, Answer(text_answer('{"name": "Oslo", "population": 1}')))
    client = with_structured_output(with_retries(BedrockChatClient(sdk, CLAUDE), base_delay=0))
    response = await client.get_response("Oslo?", output_type=City)
    assert response.value == City(name="Oslo", population=1)
    assert len(server.requests) == 2  # the SDK's own retries are off in this client: one request per attempt


async def test_a_validation_error_is_not_retried(bedrock: tuple[BedrockServer, Any]) -> None:
    server, sdk = bedrock
    server.script(Answer({"message": "Malformed input request"}, status=400, error_type="ValidationException"))
    with pytest.raises(Exception, match="Malformed input request") as info:
        await with_retries(BedrockChatClient(sdk, CLAUDE), base_delay=0).get_response("x")
    assert (failure_of(info.value).status, len(server.requests)) == (400, 1)


def test_as_chat_client_finds_the_bedrock_adapter_and_the_sync_entry_point_works(
    bedrock: tuple[BedrockServer, Any],
) -> None:
    server, sdk = bedrock
    server.script(Answer(text_answer('{"name": "Oslo", "population": 1}')))
    client = as_chat_client(sdk, model=CLAUDE)
    assert isinstance(client, BedrockChatClient)
    assert client.capabilities == BEDROCK_NATIVE
    value = with_structured_output(client).get_response_sync("Oslo?", output_type=City).value
    assert value == City(name="Oslo", population=1)


def _aws_credentials() -> bool:
    import boto3

    return boto3.session.Session().get_credentials() is not None and bool(os.environ.get("BEDROCK_MODEL"))


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("BEDROCK_MODEL"), reason="needs AWS credentials and BEDROCK_MODEL")
def test_live_bedrock_gives_a_typed_value() -> None:
    """Against the real service: `BEDROCK_MODEL=us.anthropic.claude-haiku-4-5-20251001-v1:0 pytest -m live`."""
    if not _aws_credentials():
        pytest.skip("needs AWS credentials from the standard chain")
    import boto3

    client = with_structured_output(BedrockChatClient(boto3.client("bedrock-runtime"), os.environ["BEDROCK_MODEL"]))
    value = client.get_response_sync("Oslo has 709000 inhabitants.", output_type=City).value
    assert isinstance(value, City)
