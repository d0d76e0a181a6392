"""Provider adapters. Importing this package imports no SDK; each subpackage imports its own.

What the applications (the gateway) build on: `SDKPost`, an adapter's request sent through the SDK
client's `post`; `JSONView`, a JSON object read by attribute; `status_error_from_response`, the
SDK client's typed error for a status that is not 2xx."""

from ._openai_privates import status_error_from_response
from ._post import SDKPost
from ._sse import JSONView

__all__ = ["JSONView", "SDKPost", "status_error_from_response"]
