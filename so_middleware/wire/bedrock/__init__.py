"""Amazon Bedrock Converse wire translation: so_middleware types to `converse`'s keyword arguments,
its answers (and ConverseStream's events) back.

Pure functions and one small stateful stream reader: no client, no I/O, no SDK import. The shapes
are those of botocore's service model (`botocore/data/bedrock-runtime/2023-09-30/service-2.json`:
`ConverseRequest`, `ConverseResponse`, `ConverseStreamOutput`), as boto3 takes and gives them.

Request mapping (`client.converse(modelId=, messages=, system=, ...)`):

| so_middleware                           | Converse                                                         |
|-----------------------------------------|------------------------------------------------------------------|
| `instructions` option + system messages | `system: [{"text"}]`                                             |
| user / assistant turns                  | `messages` with role `user` / `assistant` (a tool turn is a user turn) |
| text / image / PDF contents             | `{"text"}` / `{"image": {"format", "source": {"bytes"}}}` / `{"document": ...}` |
| `FunctionCallContent`                   | `{"toolUse": {"toolUseId", "name", "input"}}`                     |
| `FunctionResultContent`                 | `{"toolResult": {"toolUseId", "content": [{"text"}], "status"}}`  |
| `ReasoningContent` with a signature     | `{"reasoningContent": {"reasoningText": {"text", "signature"}}}` (without one: not sent) |
| `max_tokens`, `temperature`, `top_p`, `stop` | `inferenceConfig.maxTokens`, `.temperature`, `.topP`, `.stopSequences` |
| `FunctionTool`                          | `toolConfig.tools[].toolSpec` (`inputSchema.json`, `strict` where set) |
| `tool_choice`                           | `toolConfig.toolChoice` `{"auto": {}}` / `{"any": {}}` / `{"tool": {"name"}}`; `none`: no choice sent |
| `response_format` json_schema           | `outputConfig.textFormat` `{type: json_schema, structure: {jsonSchema: {schema: <a JSON string>, name, description}}}` |
| `response_format` json_object           | nothing: Converse has no JSON mode (the adapter warns)           |
| `seed`                                  | none on Converse: a `UserError` before any request               |
| `extra_body`                            | merged into the keyword arguments (`additionalModelRequestFields`, `guardrailConfig`, ...) |

`request_from_wire` reads such keyword arguments back (a server's side): the inverse of the table.

Answer mapping: `text` blocks are the answer, `toolUse` blocks `FunctionCallContent`,
`reasoningContent` blocks `ReasoningContent`; `stopReason` through `STOP_REASONS`; usage
`inputTokens`, `outputTokens`, `totalTokens`, `cacheReadInputTokens`.
"""

from ._answer import STOP_REASONS, BedrockStreamReader, response_from_wire, response_to_wire, usage_from_wire
from ._reading import request_from_wire
from ._request import block_to_wire, output_format_to_wire, request_to_wire

__all__ = [
    "STOP_REASONS",
    "BedrockStreamReader",
    "block_to_wire",
    "output_format_to_wire",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
    "usage_from_wire",
]
