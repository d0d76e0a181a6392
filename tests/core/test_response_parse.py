"""ChatResponse.parse / try_parse: types chosen after the call."""

from __future__ import annotations

import subprocess
import sys

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


def test_parse_of_a_cut_off_response_never_repairs_the_tail() -> None:
    from so_middleware import FinishReason

    cut = ChatResponse(
        ChatMessage("assistant", '{"response": [1, 2, 3]} and {"response": [4, 5'), finish_reason=FinishReason.LENGTH
    )
    assert cut.parse(list[int]) == [1, 2, 3]  # the complete value, not the repaired [4, 5]
    only_tail = ChatResponse(ChatMessage("assistant", '{"response": [4, 5'), finish_reason=FinishReason.LENGTH)
    assert only_tail.try_parse(list[int]) is None
    assert ChatResponse(ChatMessage("assistant", '{"response": [4, 5')).parse(list[int]) == [4, 5]  # not cut: lenient


def test_parse_works_in_a_fresh_interpreter_that_imports_only_the_core() -> None:
    """Nothing has to be installed on import: `parse` finds the schema layer itself."""
    code = (
        "from so_middleware.core import ChatMessage, ChatResponse\n"
        "print(ChatResponse(ChatMessage('assistant', '```json\\n[1, 2]\\n```')).parse(list[int]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[1, 2]"
