"""A typing.TypedDict output type through the structured-output layer."""

from __future__ import annotations

import pytest
from typed_dicts import Address

from so_middleware.middleware.structured_output import with_structured_output
from so_middleware.testing import FakeChatClient


@pytest.mark.anyio
async def test_a_typing_typeddict_run_returns_its_dict() -> None:
    client = with_structured_output(FakeChatClient('{"city": "Oslo"}'))
    response = await client.get_response("x", output_type=Address)
    assert response.value == {"city": "Oslo"}
