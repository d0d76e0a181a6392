"""Validation time against answer size: it should grow linearly, whatever the schema's patterns.

A raw schema with a catastrophic pattern (`^(a+)+$`, matched on a linear-time engine) and
`uniqueItems` over objects, and the same shape as a pydantic model, validate answers of 10k, 40k
and 160k items. Each size is four times the last, so linear time shows as about 4x per row.

    .venv/bin/python bench/validation_scale.py
"""

from __future__ import annotations

import json
import time

from pydantic import BaseModel

from so_middleware.schema import OutputSchema

ITEM = {
    "type": "object",
    "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}, "n": {"type": "number"}},
    "required": ["s", "n"],
}
RAW = {
    "type": "object",
    "properties": {"items": {"type": "array", "uniqueItems": True, "items": ITEM}},
    "required": ["items"],
}


class Item(BaseModel):
    s: str
    n: float


class Doc(BaseModel):
    items: list[Item]


def main() -> None:
    raw, typed = OutputSchema(RAW, strict=False), OutputSchema(Doc)
    for count in (10_000, 40_000, 160_000):
        text = json.dumps({"items": [{"s": "a" * 20, "n": index + 0.5} for index in range(count)]})
        timings = []
        for schema in (raw, typed):
            start = time.perf_counter()
            schema.validate_json(text)
            timings.append(time.perf_counter() - start)
        print(f"{count} items, {len(text) / 1e6:.1f} MB: raw schema {timings[0]:.3f} s, typed {timings[1]:.3f} s")


if __name__ == "__main__":
    main()
