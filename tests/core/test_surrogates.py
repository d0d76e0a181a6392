"""Lone surrogates, found and mended by one module for every surface (the caller's text refused by
`check_sendable`, the gateway and the batch inputs; a model's or backend's text mended)."""

from __future__ import annotations

import json

import pytest

from so_middleware.core import describe_surrogate, lone_surrogate_at, mend_text

HIGH, LOW = "\ud83d", "\ude00"  # the two halves of 😀


@pytest.mark.parametrize(
    ("text", "at", "mended"),
    [
        ("plain ascii", None, "plain ascii"),
        ("café 😀", None, "café 😀"),  # a pair decoded is one code point
        (json.loads('"a\\ud83d\\ude00b"'), None, "a😀b"),  # a pair spelled as two escapes
        (f"ab{HIGH}", 2, "ab\ufffd"),
        (f"{LOW}x{HIGH}", 0, "\ufffdx\ufffd"),
        (f"é{LOW}{LOW}", 1, "é\ufffd\ufffd"),
        (json.loads('"x\\ud83d"'), 1, "x\ufffd"),  # JSON allows it; UTF-8 cannot spell it
    ],
)
def test_found_and_mended(text: str, at: int | None, mended: str) -> None:
    assert lone_surrogate_at(text) == at
    assert mend_text(text) == mended
    mended.encode("utf-8")  # what is mended can be written


def test_a_text_without_one_is_returned_as_it_is() -> None:
    text = "naïve"
    assert mend_text(text) is text


def test_the_description_names_the_character_and_its_place() -> None:
    assert describe_surrogate(f"ab{HIGH}c") == "'\\ud83d' at character 2"
