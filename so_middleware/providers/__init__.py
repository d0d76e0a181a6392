"""Provider adapters. Importing this package imports no SDK; each subpackage imports its own.

What the applications (the gateway) build on: `SDKPost`, an adapter's request sent through the SDK
client's `post`; `JSONView`, a JSON object read by attribute; `status_error_from_response`, the
SDK client's typed error for a status that is not 2xx; `sdk_boundary`, where SDK calls' transport
errors become `TransportError`s."""

from ._openai_privates import status_error_from_response
from ._post import SDKPost
from ._sdk_use import sdk_boundary, transport_error
from ._sse import JSONView

__all__ = ["JSONView", "SDKPost", "sdk_boundary", "status_error_from_response", "transport_error"]
