"""Test helpers: a scripted fake chat client that records what each call received.

Example:
    fake = FakeChatClient(["{\\"name\\": \\"Ada\\"}"])
    client = with_structured_output(fake)
    response = await client.get_response("Who?", output_type=Person)
    fake.calls[0].options.response_format  # what the layer asked the model for
"""

from ._fake import FakeCall, FakeChatClient, Reply
from ._helpers import StatusError, final_response
from ._http import HttpRecorder

__all__ = ["FakeCall", "FakeChatClient", "HttpRecorder", "Reply", "StatusError", "final_response"]
