"""Non-finite numbers in an answer, through the structured-output layer (split from
tests/schema/test_non_finite.py)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from so_middleware import with_structured_output
from so_middleware.testing import FakeChatClient


class Reading(BaseModel):
    value: float


@pytest.mark.anyio
async def test_the_engine_re_asks_after_a_non_finite_answer() -> None:
    fake = FakeChatClient(['{"value": NaN}', '{"value": 1e999}', '{"value": 2.5}'])
    client = with_structured_output(fake)
    response = await client.get_response("How much?", output_type=Reading)
    assert response.value == Reading(value=2.5)
    assert len(response.attempts) == 3 and len(fake.calls) == 3
