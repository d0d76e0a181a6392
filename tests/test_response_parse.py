"""ChatResponse.parse / try_parse: types chosen after the call."""

from __future__ import annotations

import pytest

from so_middleware import ChatMessage, ChatResponse, ModelBehaviorError, UsageDetails


def test_parse_and_try_parse_types_chosen_later() -> None:
    response = ChatResponse(ChatMessage("assistant", '{"response": [1, 2, 3]}'), usage=UsageDetails(1, 2, 3))
    assert response.parse(list[int]) == [1, 2, 3]
    assert response.try_parse(dict[str, str]) is None
    with pytest.raises(ModelBehaviorError) as caught:
        response.parse(bool)
    assert caught.value.raw_texts == ['{"response": [1, 2, 3]}']
    assert caught.value.usage == UsageDetails(1, 2, 3)
