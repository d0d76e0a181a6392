"""A griffe extension for the API reference: every parameter gets a row with its type and default.

The package's docstrings describe their parameters in prose; mkdocstrings shows a parameter's type
and default only for the parameters a docstring's `Args:` section lists. This adds the parameters
a docstring leaves out to its `Args:` section (with a description from `DESCRIPTIONS` when the
name has one), so each parameter has its `TYPE:` and `DEFAULT:` lines, taken from the signature.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

# Parameters whose meaning is not in their name, as the reference explains them.
DESCRIPTIONS = {
    "adapter_options": (
        "For a raw SDK client, the options of the adapter `as_chat_client` builds over it: `model=` "
        '(the model every call names), for OpenAI `api="responses"` (the Responses API instead of '
        "Chat Completions), and the adapter's own keywords (`OpenAIChatClient`, "
        "`OpenAIResponsesClient`, `AnthropicChatClient`; for Anthropic `max_tokens=`). Refused for a "
        "client that is already a `ChatClient`."
    ),
}
_ARGS = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters):\s*$", re.M)
_SKIPPED = {"self", "cls"}


def with_parameter_rows(docstring: str, parameters: griffe.Parameters) -> str:
    """`docstring` with an `Args:` section listing each parameter of `parameters` (left as it is
    when it has one already, or when there is no parameter to list)."""
    if _ARGS.search(docstring):
        return docstring
    rows = []
    for parameter in parameters:
        if parameter.name in _SKIPPED:
            continue
        stars = {"variadic positional": "*", "variadic keyword": "**"}.get(parameter.kind.value, "")
        rows.append(f"    {stars}{parameter.name}: {DESCRIPTIONS.get(parameter.name, '')}".rstrip())
    if not rows:
        return docstring
    return docstring.rstrip() + "\n\nArgs:\n" + "\n".join(rows)


class ParameterRows(griffe.Extension):
    """Lists every parameter of a documented function, method or class (its `__init__`'s)."""

    def on_function(self, *, func: griffe.Function, **kwargs: Any) -> None:
        if func.docstring is not None and func.name != "__init__":
            func.docstring.value = with_parameter_rows(func.docstring.value, func.parameters)

    def on_class(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        init = cls.members.get("__init__")
        if cls.docstring is not None and isinstance(init, griffe.Function):
            cls.docstring.value = with_parameter_rows(cls.docstring.value, init.parameters)
