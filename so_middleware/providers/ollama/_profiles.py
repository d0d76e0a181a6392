"""The capability profile of Ollama's native `/api/chat`.

`format` takes a JSON schema and the engine compiles it to a grammar, so the schema is enforced
(`"ollama"` dialect: recursion unrolled, since the compiler takes none); `format: "json"` is JSON
mode. Tools are passed to models whose template has them, with no way to force a call (Ollama has
no tool choice). A trailing assistant message is continued. The model behind it is often small
and local, so a streamed answer whose tail repeats is watched as a loop.
"""

from __future__ import annotations

from ...core import Capabilities

__all__ = ["OLLAMA_NATIVE"]

OLLAMA_NATIVE = Capabilities(
    name="ollama-native",
    native_json_schema=True,
    json_object=True,
    tools=True,
    forced_tool_choice=False,
    strict_tools=False,
    assistant_prefill=True,
    prefill_echoed=False,
    schema_profile="ollama",
    loop_breaking=(("options", {"repeat_penalty": 1.3}),),
    prone_to_loops=True,
)
