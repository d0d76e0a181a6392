"""ChatResponse.parse / try_parse: types chosen after the call."""

from __future__ import annotations

import subprocess
import sys

import pytest

from so_middleware import ChatMessage, ChatResponse, ModelBehaviorError, UsageDetails
from so_middleware.core import install_text_reader


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


def test_parse_reads_through_the_port_the_schema_layer_fills_on_import() -> None:
    """The core imports no schema module, yet a fresh interpreter that imports only
    `so_middleware.core` can parse: the package brings the schema layer, which fills the port."""
    script = (
        "import sys\n"
        "from so_middleware.core import ChatMessage, ChatResponse\n"
        "assert 'so_middleware.schema' in sys.modules\n"
        "print(ChatResponse(ChatMessage('assistant', '```json\\n[1, 2]\\n```')).parse(list[int]))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[1, 2]"


def test_an_installed_reader_is_the_one_parse_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    from so_middleware.core import _text_reading
    from so_middleware.schema import parse_text

    seen: list[tuple[str, object, bool]] = []

    def reader(text: str, output_type: object, complete: bool) -> object:
        seen.append((text, output_type, complete))
        return parse_text(text, output_type, complete=complete)

    monkeypatch.setattr(_text_reading, "_reader", None)
    install_text_reader(reader)
    assert ChatResponse(ChatMessage("assistant", "[3]")).parse(list[int]) == [3]
    assert seen == [("[3]", list[int], False)]
