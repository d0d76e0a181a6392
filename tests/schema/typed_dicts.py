"""Helpers shared by test_typeddict.py and the cases of it that run through the layers
(test_typeddict_through_the_layers.py)."""

from __future__ import annotations

import typing


class Address(typing.TypedDict):
    """Where someone lives."""

    city: str
