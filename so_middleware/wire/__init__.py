"""Wire formats, one module per protocol holding both directions: what a client sends and what a
server answers. The adapters (`providers/`) write requests and read answers with them; the gateway
reads requests and writes answers with the same tables.

- `common`: what every protocol shares (the model, data URIs, a function tool's fields, forced tools).
- `responses`: the Responses API's tools, tool choice, `text.format`, usage.
- `responses_items`: Responses input and output items.
- `chat`: Chat Completions tools, tool choice, content parts, usage.
"""
