"""Frameworks no one here wrote, unmodified, through the gateway over the real local model, each
with its structured output on the Responses API (`text.format` json_schema): pydantic-ai's OpenAI
Responses model with `NativeOutput`, and langchain-openai's `ChatOpenAI(use_responses_api=True)`
`.with_structured_output(..., method="json_schema")`; plain and streamed."""

from __future__ import annotations

import pytest
from langchain_openai import ChatOpenAI
from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.models.openai import OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

from so_middleware.gateway._server import AppServer

pytestmark = [pytest.mark.local_server, pytest.mark.anyio]


class Person(BaseModel):
    name: str
    age: int


PROMPT = "John Smith is a 35-year-old engineer. Extract the person."


def _agent(gateway: AppServer) -> Agent[None, Person]:
    model = OpenAIResponsesModel("smollm2", provider=OpenAIProvider(base_url=gateway.base_url, api_key="none"))
    return Agent(model, output_type=NativeOutput(Person), retries=0)


def test_pydantic_ai_native_output(local_gateway: AppServer) -> None:
    result = _agent(local_gateway).run_sync(PROMPT, model_settings={"max_tokens": 60, "temperature": 0})
    assert isinstance(result.output, Person)


async def test_pydantic_ai_native_output_streamed(local_gateway: AppServer) -> None:
    agent = _agent(local_gateway)
    async with agent.run_stream(PROMPT, model_settings={"max_tokens": 60, "temperature": 0}) as run:
        partials = [partial async for partial in run.stream_output(debounce_by=None)]
        output = await run.get_output()
    assert isinstance(output, Person) and partials


def _langchain(gateway: AppServer) -> ChatOpenAI:
    return ChatOpenAI(model="smollm2", use_responses_api=True, base_url=gateway.base_url, api_key="none",
                      max_tokens=60, temperature=0, max_retries=0)  # type: ignore[arg-type]  # fmt: skip


def test_langchain_with_structured_output(local_gateway: AppServer) -> None:
    structured = _langchain(local_gateway).with_structured_output(Person, method="json_schema")
    assert isinstance(structured.invoke(PROMPT), Person)


def test_langchain_with_structured_output_streamed(local_gateway: AppServer) -> None:
    structured = _langchain(local_gateway).with_structured_output(Person, method="json_schema")
    chunks = list(structured.stream(PROMPT))
    assert chunks and isinstance(chunks[-1], Person)
