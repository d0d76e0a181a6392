"""Types the schema code cannot use, asked of the structured-output layer (split from
tests/schema/test_unusable_types.py)."""

from __future__ import annotations

import pytest

from so_middleware import UserError, with_structured_output
from so_middleware.testing import FakeChatClient


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_an_unusable_output_type_is_refused_before_any_call(stream: bool) -> None:
    fake = FakeChatClient(['{"response": "int"}'] * 9)
    client = with_structured_output(fake)
    with pytest.raises(UserError, match="cannot come from a model's answer"):
        if stream:
            await client.get_response("Which type?", output_type=type[int], stream=True).get_final_response()
        else:
            await client.get_response("Which type?", output_type=type[int])
    assert fake.calls == []
