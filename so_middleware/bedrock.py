"""Amazon Bedrock adapter: `from so_middleware.bedrock import BedrockChatClient`.

Needs the extra: `pip install so-middleware[bedrock]`.
"""

from .providers.bedrock import *  # noqa: F403
from .providers.bedrock import __all__ as __all__
