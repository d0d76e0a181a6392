"""The openai SDK's private names so_middleware relies on (all read in
`so_middleware/providers/_openai_privates.py`): when an SDK release changes one, these fail and
say which, instead of the adapters quietly falling back to `create` or sending the wrong key."""

from __future__ import annotations

import inspect
from typing import Any

import openai
import pytest
from openai.resources.chat.completions import AsyncCompletions, Completions
from openai.resources.responses import AsyncResponses, Responses

from so_middleware.providers import _openai_privates as privates


def test_final_request_options_still_carry_security() -> None:
    from openai._models import FinalRequestOptions  # a private module: the point of this test

    assert "security" in FinalRequestOptions.model_fields, "openai._models.FinalRequestOptions lost `security`"
    assert privates.request_options_know_security()


@pytest.mark.parametrize("resource", [Completions, AsyncCompletions, Responses, AsyncResponses])
def test_the_sdks_own_create_is_recognised_by_its_source_file(resource: type) -> None:
    create = inspect.getattr_static(resource, "create")
    assert privates.is_the_sdks_own(create), f"{resource.__qualname__}.create is no longer a plain function in openai/"


def test_a_function_outside_the_sdk_is_not_its_own() -> None:
    def create(**kwargs: Any) -> None: ...

    assert not privates.is_the_sdks_own(create)
    assert not privates.is_the_sdks_own(len)


@pytest.mark.parametrize("client", [openai.OpenAI, openai.AsyncOpenAI])
def test_post_still_takes_what_sdk_post_sends(client: type) -> None:
    parameters = inspect.signature(client.post).parameters
    missing = {"path", "cast_to", "body", "options", "stream", "stream_cls"} - set(parameters)
    assert not missing, f"{client.__name__}.post no longer takes {sorted(missing)}"


@pytest.mark.parametrize("client", [openai.OpenAI, openai.AsyncOpenAI])
def test_a_status_error_is_still_built_by_the_sdk_client(client: type) -> None:
    import httpx2

    sdk = client(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    response = httpx2.Response(429, json={"error": {"message": "slow down"}}, request=request)
    assert hasattr(sdk, "_make_status_error_from_response"), f"{client.__name__} lost _make_status_error_from_response"
    error = privates.status_error_from_response(sdk, response)
    assert isinstance(error, openai.RateLimitError) and error.status_code == 429
