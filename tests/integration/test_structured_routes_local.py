"""Structured output on the routes of the local server that do not enforce `text.format` or
`output_config` themselves: Responses (a Chat Completions `response_format` key is passed through
and honoured) and Anthropic Messages (prompting with a prefill only). Each type comes back typed
or raises ModelBehaviorError carrying every attempt (IncompleteOutputError for an answer cut off at
max_tokens); never anything else."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel
from test_structured_local import CASES

from so_middleware import (
    FinishReason,
    IncompleteOutputError,
    ModelBehaviorError,
    StructuredOutput,
    with_structured_output,
)
from so_middleware.local import LocalModelServer, chat_client

pytestmark = pytest.mark.anyio


@pytest.fixture
async def route_client(local_server: LocalModelServer, request: pytest.FixtureRequest) -> Any:
    client = chat_client(local_server, request.param)
    yield client
    await client.sdk_client.close()


def feature_for(output_type: Any) -> StructuredOutput[Any]:
    return StructuredOutput(schema=output_type) if isinstance(output_type, dict) else StructuredOutput(output_type)


@pytest.mark.parametrize("route_client", ["responses"], indirect=True)
@pytest.mark.parametrize(("label", "output_type", "prompt", "check"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_responses_route_is_typed_through_the_passthrough(
    route_client: Any, label: str, output_type: Any, prompt: str, check: Any, stream: bool
) -> None:
    client = with_structured_output(route_client)
    options = {"features": [feature_for(output_type)], "max_tokens": 120, "temperature": 0}
    if stream:
        response = await client.get_response(prompt, options=options, stream=True).get_final_response()
    else:
        response = await client.get_response(prompt, options=options)
    assert check(response.value), response.text
    assert [a.strategy for a in response.attempts] == ["native"]


@pytest.mark.parametrize("route_client", ["anthropic"], indirect=True)
@pytest.mark.parametrize(("label", "output_type", "prompt", "check"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_anthropic_route_typed_or_every_attempt_reported(
    route_client: Any, label: str, output_type: Any, prompt: str, check: Any, stream: bool
) -> None:
    client = with_structured_output(route_client)
    options = {"features": [feature_for(output_type)], "max_tokens": 100, "temperature": 0}
    try:
        if stream:
            response = await client.get_response(prompt, options=options, stream=True).get_final_response()
        else:
            response = await client.get_response(prompt, options=options)
    except ModelBehaviorError as error:
        assert len(error.attempts) == 3 and all(a.text for a in error.attempts)
        assert all(a.strategy == "prompted" for a in error.attempts)
        assert error.usage is not None and error.usage.output_tokens
        return
    except IncompleteOutputError as error:  # an answer cut off at max_tokens is final: no re-ask
        assert error.attempts and all(a.text for a in error.attempts)
        assert (
            all(a.strategy == "prompted" for a in error.attempts)
            and error.attempts[-1].finish_reason == FinishReason.LENGTH
        )
        assert error.usage is not None and error.usage.output_tokens
        return
    assert check(response.value), response.text
    assert all(a.strategy == "prompted" for a in response.attempts)


@pytest.mark.parametrize("route_client", ["anthropic"], indirect=True)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_cut_off_prompted_answer_is_incomplete_without_reasks(route_client: Any, stream: bool) -> None:
    from test_structured_local import Person

    client = with_structured_output(route_client)
    options = {"max_tokens": 3, "temperature": 0}
    with pytest.raises(IncompleteOutputError) as caught:
        if stream:
            await client.get_response(
                "John Smith is 35.", output_type=Person, options=options, stream=True
            ).get_final_response()
        else:
            await client.get_response("John Smith is 35.", output_type=Person, options=options)
    assert len(caught.value.attempts) == 1 and caught.value.attempts[0].strategy == "prompted"
    assert caught.value.attempts[0].text.startswith("{") and caught.value.usage is not None


class _Email(BaseModel):
    kind: Literal["email"]
    address: str


class _Phone(BaseModel):
    kind: Literal["phone"]
    number: str


class _Contacts(BaseModel):
    contacts: list[_Email | _Phone]


class _Numbers(BaseModel):
    numbers: list[int]


@pytest.mark.parametrize("route_client", ["anthropic"], indirect=True)
@pytest.mark.parametrize(
    ("output_type", "prefill", "prompt"),
    [
        (_Numbers, '{"numbers": [', "The winning numbers were 4, 8 and 15."),
        (_Contacts, '{"contacts": [{"kind": "', "Reach Li at li@example.org or on 555-0199."),
    ],
    ids=["list", "tagged-union"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_anthropic_route_prompted_with_the_deep_prefill(
    route_client: Any, output_type: Any, prefill: str, prompt: str, stream: bool
) -> None:
    """The Messages route honours no engine constraint (bench/route_constraints.py), so the
    default strategy there is `prompted`, its answer opened as deep as one shape goes; the
    server's echo of that longer prefill is removed once, never kept twice."""
    client = with_structured_output(route_client)
    options = {"features": [StructuredOutput(output_type)], "max_tokens": 100, "temperature": 0}
    try:
        if stream:
            response = await client.get_response(prompt, options=options, stream=True).get_final_response()
        else:
            response = await client.get_response(prompt, options=options)
        attempts = response.attempts
        assert isinstance(response.value, output_type)
    except (ModelBehaviorError, IncompleteOutputError) as error:
        attempts = error.attempts
        assert error.usage is not None and error.usage.output_tokens
    assert attempts and all(a.strategy == "prompted" for a in attempts)
    first = attempts[0].text
    assert first.startswith(prefill) and not first[len(prefill) :].startswith(prefill)
