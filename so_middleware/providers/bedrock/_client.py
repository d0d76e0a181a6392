"""`BedrockChatClient`: the Amazon Bedrock adapter, over boto3's `bedrock-runtime` client
(`converse` and `converse_stream`).

boto3 is synchronous: each call runs on a worker thread (`off_loop`: a pool of the event loop's own,
cheaper per call than `anyio.to_thread`), and a stream is read
by one thread of its own (`EventPump`), so the event loop never waits on the socket. A cancelled
call (a deadline, a closed stream) returns at once; its thread finishes on its own. The async
alternative, aioboto3/aiobotocore, pins botocore to its own release (aioboto3 15.5 to botocore
1.40.61, before `outputConfig`, and with wrapt < 2), so it cannot sit beside the boto3 this
extra needs.

Credentials, region and the SDK's own retries are the boto3 client's: its standard credential
chain, its `region_name`, its `Config(retries=...)`. The adapter reads none of the credentials.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar

import botocore.client
import botocore.exceptions

from ...core import (
    BaseChatClient,
    Capabilities,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    UserError,
    redact_url,
)
from ...wire.bedrock import BedrockStreamReader, request_to_wire, response_from_wire
from ...wire.common import warn_if_not_enforced
from .._chunks import read_chunks
from .._sdk_client import DEFAULT_IDLE_TIMEOUT, seconds_or_none
from .._sdk_use import sdk_boundary
from ._direct import DirectConverse
from ._events import EventPump
from ._frames import frame_events
from ._profiles import profile_for
from ._worker import off_loop

__all__ = ["DEFAULT_IDLE_TIMEOUT", "BedrockChatClient"]

_MODELS_KEPT = 64  # model ids a client remembers as checked

_FIX_CREDENTIALS = (
    "Amazon Bedrock: the boto3 client found no AWS credentials (field: credentials). Fix: set "
    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or sign in with `aws sso login`; "
    "the client reads the standard AWS credential chain"
)


class BedrockChatClient(BaseChatClient):
    """A ChatClient over a boto3 `bedrock-runtime` client, through the Converse API.

    The capability profile follows the model's family (`profile_for`): native structured output
    (`outputConfig.textFormat`) where the model has it, a forced tool otherwise; `capabilities=`
    overrides it.

    Example:
        client = BedrockChatClient(boto3.client("bedrock-runtime"), "us.anthropic.claude-haiku-4-5-20251001-v1:0")
        response = await client.get_response("Hello", options={"instructions": "Be brief."})
        print(response.text, response.usage, response.finish_reason)
    """

    provider_name: ClassVar[str] = "aws.bedrock"

    def __init__(
        self,
        sdk_client: Any,
        model: str | None = None,
        *,
        capabilities: Capabilities | None = None,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        service = getattr(getattr(getattr(sdk_client, "meta", None), "service_model", None), "service_name", None)
        if not isinstance(sdk_client, botocore.client.BaseClient) or service != "bedrock-runtime":
            raise UserError(
                f"BedrockChatClient needs a boto3 bedrock-runtime client (boto3.client('bedrock-runtime')), "
                f"not {type(sdk_client).__name__}{f' for {service}' if service else ''}"
            )
        self.sdk_client = sdk_client
        operation = sdk_client.meta.service_model.operation_model("Converse")
        self._models_checked: set[str] = set()  # the model ids the pattern admitted (its match is slow)
        self._model_id = re.compile(operation.input_shape.members["modelId"].metadata["pattern"])
        self.model = self._checked_model(model) if model else None
        self.base_url = redact_url(sdk_client.meta.endpoint_url)
        self.idle_timeout = seconds_or_none("idle_timeout", idle_timeout)
        self.capabilities = capabilities or profile_for(model)
        self._capabilities_given = capabilities is not None
        direct = DirectConverse.for_client(sdk_client)
        self._converse = direct.call if direct is not None else sdk_client.converse
        direct = DirectConverse.for_client(sdk_client, "ConverseStream")
        self._converse_stream = direct.call if direct is not None else sdk_client.converse_stream

    def _checked_model(self, model: str) -> str:
        """`model` when botocore's service model admits it as a `modelId` (its pattern: a model id,
        an inference profile, an ARN); boto3 checks only the length, and the server answers 400."""
        if model in self._models_checked:
            return model
        if not 1 <= len(model) <= 2048 or self._model_id.fullmatch(model) is None:
            raise UserError(
                f"Amazon Bedrock: {model!r} is not a model id (field: model). Fix: use a model or inference "
                "profile id such as 'anthropic.claude-haiku-4-5-20251001-v1:0' or "
                "'us.anthropic.claude-haiku-4-5-20251001-v1:0', or its ARN"
            )
        if len(self._models_checked) < _MODELS_KEPT:
            self._models_checked.add(model)
        return model

    def capabilities_for(self, model: str, capabilities: Capabilities | None = None) -> Capabilities:
        """The profile of a call to `model` (a per-call `options.model`): `capabilities` or the one
        given to the adapter, else the one `profile_for(model)` picks.

        Example: `BedrockChatClient(client, "amazon.nova-pro-v1:0").capabilities_for("qwen.qwen3-32b-v1:0").native_json_schema`.
        """
        if capabilities is not None and capabilities is not self.capabilities:
            return capabilities
        return self.capabilities if self._capabilities_given else profile_for(model)

    def request_for(self, messages: list[ChatMessage], options: ChatOptions) -> dict[str, Any]:
        """The `converse` keyword arguments this adapter would send (for inspection and tests)."""
        request = request_to_wire(messages, options, model=self.model)
        self._checked_model(request["modelId"])
        warn_if_not_enforced(options, self.capabilities_for(request["modelId"]), "Bedrock Converse", ("json_schema",))
        return request

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        request = self.request_for(messages, options)
        with self._boundary():
            answer = await off_loop(functools.partial(self._converse, **request))
        return response_from_wire(answer, model=request["modelId"])

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        request = self.request_for(messages, options)
        reader = BedrockStreamReader(request["modelId"])
        idle = options.idle_timeout if options.idle_timeout is not None else self.idle_timeout
        with self._boundary():
            pump = EventPump(lambda: frame_events(self._converse_stream(**request)["stream"]))
            try:
                await pump.opened()
            except BaseException:
                pump.close()
                raise
            updates = read_chunks(pump.events(), reader, idle=idle, source="Amazon Bedrock")
            async with contextlib.aclosing(updates):  # closing this stream stops the reading thread at once
                async for update in updates:
                    yield update

    @contextlib.contextmanager
    def _boundary(self) -> Iterator[None]:
        """The one error boundary, and the errors boto3 raises before sending as `UserError`s."""
        try:
            with sdk_boundary(self.sdk_client, is_async=False):
                yield
        except botocore.exceptions.NoCredentialsError:
            raise UserError(_FIX_CREDENTIALS) from None
        except botocore.exceptions.ParamValidationError as error:
            raise UserError(f"Amazon Bedrock: boto3 refused the request before sending it: {error}") from error

    fresh_stream = _stream  # its reader makes a new update for every chunk

    def __repr__(self) -> str:
        return f"BedrockChatClient(boto3 bedrock-runtime(endpoint={self.base_url!r}), model={self.model!r})"
