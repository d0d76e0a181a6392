"""A griffe extension for the API reference: a docstring's `Example:` section is code.

The package's docstrings write their examples as an indented block under `Example:` (or
`Examples:`), as plain Python without `>>>`. Google-style parsing reads such a section as
Markdown prose, so `x["key"]` would turn into a link; this wraps the block in a Python fence.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_HEADING = re.compile(r"^(?P<indent>[ ]*)Examples?:[ ]*$")


def fence_examples(text: str) -> str:
    """`text` with the indented block under each `Example:` heading fenced as Python."""
    lines = text.splitlines()
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        out.append(line)
        index += 1
        heading = _HEADING.match(line)
        if heading is None:
            continue
        indent = len(heading["indent"])
        block: list[str] = []
        while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > indent):
            block.append(lines[index])
            index += 1
        while block and not block[-1].strip():
            block.pop()
            index -= 1
        if not block or block[0].lstrip().startswith("```"):
            out.extend(block)
            continue
        inner = " " * min(_indent(item) for item in block if item.strip())
        out.extend([inner + "```python", *block, inner + "```"])
    return "\n".join(out)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


class FencedExamples(griffe.Extension):
    """Fences every docstring's `Example:` section as Python code."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_examples(obj.docstring.value)
