"""An answer that calls one of the caller's tools is a step of the caller's tool loop: passed up unjudged."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from so_middleware import FunctionCallContent, FunctionTool, with_structured_output
from so_middleware.testing import FakeChatClient, Reply

pytestmark = pytest.mark.anyio
WEATHER = FunctionTool("get_weather", {"type": "object", "properties": {"city": {"type": "string"}}})


class Forecast(BaseModel):
    city: str


@pytest.mark.parametrize("stream", [False, True], ids=["respond", "stream"])
async def test_a_call_of_a_callers_tool_comes_back_unjudged_and_unre_asked(stream: bool) -> None:
    fake = FakeChatClient([Reply(tool_calls=[("get_weather", '{"city": "Rome"}')]), '{"city": "Rome"}'])
    client = with_structured_output(fake)
    options = {"tools": [WEATHER]}
    if stream:
        updates = client.get_response("Rome?", output_type=Forecast, options=options, stream=True)
        async for _ in updates:
            pass
        response = await updates.get_final_response()
    else:
        response = await client.get_response("Rome?", output_type=Forecast, options=options)
    assert len(fake.calls) == 1  # no re-ask
    assert not response.has_value
    calls = [c for m in response.messages for c in m.contents if isinstance(c, FunctionCallContent)]
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", '{"city": "Rome"}')]


async def test_a_call_of_a_tool_nobody_declared_is_still_judged_and_re_asked() -> None:
    fake = FakeChatClient([Reply(tool_calls=[("get_weather", '{"city": "Rome"}')]), '{"city": "Rome"}'])
    response = await with_structured_output(fake).get_response("Rome?", output_type=Forecast)
    assert response.value == Forecast(city="Rome")
    assert len(fake.calls) == 2
