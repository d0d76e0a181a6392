"""What one package may use of another, through the other's public names."""

from __future__ import annotations

import openai
import pytest

from so_middleware import UserError
from so_middleware.openai import OpenAIChatClient


def test_an_adapter_over_another_sdk_client_leaves_the_first_as_it_was() -> None:
    """`with_sdk_client` is how batch runs an adapter over an SDK client that holds its requests
    (it used to copy the adapter and overwrite its `sdk_client`)."""
    first = openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
    adapter = OpenAIChatClient(first, "m", discover=False)
    second = first.with_options(max_retries=0)
    other = adapter.with_sdk_client(second)
    assert other.sdk_client is second and other is not adapter
    assert adapter.sdk_client is first
    assert (other.model, other.capabilities) == (adapter.model, adapter.capabilities)


def test_an_sdk_client_of_another_kind_is_refused() -> None:
    adapter = OpenAIChatClient(openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1"), "m")
    with pytest.raises(UserError, match="SDK client of its kind"):
        adapter.with_sdk_client(object())


def test_the_command_line_uses_batch_through_its_package() -> None:
    import so_middleware.batch as batch

    assert callable(batch.run_batch) and callable(batch.add_batch_arguments) and callable(batch.server_client)
    assert "run_batch" not in batch.__all__  # the command line's, not the library's surface
