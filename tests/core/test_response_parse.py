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


def test_parse_works_from_the_core_alone_and_a_second_parser_is_refused() -> None:
    # A fresh process that imports only the core: the package root has installed the parser.
    code = (
        "from so_middleware.core import ChatResponse, ChatMessage, UserError, register_text_parser\n"
        "from so_middleware.schema import parse_text\n"
        "r = ChatResponse(ChatMessage('assistant', '[1, 2]'))\n"
        "assert r.parse(list[int]) == [1, 2]\n"
        "register_text_parser(parse_text)  # the same parser again: nothing changes\n"
        "try:\n"
        "    register_text_parser(lambda text, output_type, *, complete: None)\n"
        "except UserError as e:\n"
        "    print('refused:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert "refused: ChatResponse.parse already has its parser" in out.stdout
