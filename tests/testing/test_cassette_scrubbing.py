"""The cassette recorder scrubs every credential carrier from a real recording (made here, through
the OpenAI SDK, against a loopback server that also sends secrets back), and the scrubbed
recording still replays."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
import yaml

from so_middleware.testing._cassettes import SECRET_NAME_PARTS, is_secret_name, recorder
from so_middleware.testing._faults import Fault, FaultServer, completion

SECRET = "s3cr3t-value-0123456789"
REQUEST_HEADERS = {
    "x-goog-api-key": SECRET, "api_key": SECRET, "Ocp-Apim-Subscription-Key": SECRET,
    "X-Amz-Security-Token": SECRET, "Cookie": f"session={SECRET}", "Proxy-Authorization": f"Basic {SECRET}",
    "X-Client-Secret": SECRET, "x-goog-user-project": SECRET, "X-Trace": "kept",
}  # fmt: skip
QUERY = {"key": SECRET, "api_key": SECRET, "access_token": SECRET, "sig": SECRET, "X-Amz-Signature": SECRET,
         "api-version": "2024-10-21"}  # fmt: skip
RESPONSE_HEADERS = {
    "Set-Cookie": f"session={SECRET}", "x-api-key": SECRET, "X-Upstream-Auth": SECRET,
    "X-Refresh-Token": SECRET, "X-Served-By": "kept",
}  # fmt: skip


@pytest.fixture
def loopback() -> Iterator[FaultServer]:
    """A loopback server answering a chat completion with secret-carrying response headers."""
    answer = Fault("json", body=completion("Hello").body, headers=RESPONSE_HEADERS)
    with FaultServer(answer) as server:
        yield server


def call(port: int) -> str:
    sdk = openai.OpenAI(
        base_url=f"http://ada:pw-{SECRET}@127.0.0.1:{port}/v1", api_key=f"sk-{SECRET}", max_retries=0,
        default_headers=REQUEST_HEADERS, default_query=QUERY,
    )  # fmt: skip
    with sdk:
        completion = sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}], max_tokens=5)
    return str(completion.choices[0].message.content)


def test_recording_holds_no_credential_and_still_replays(
    loopback: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = loopback.port
    monkeypatch.setenv("SO_MIDDLEWARE_RECORD_MODE", "once")
    with recorder(tmp_path).use_cassette("scrub.yaml"):
        assert call(port) == "Hello"
    text = (tmp_path / "scrub.yaml").read_text()
    assert SECRET not in text and "pw-" not in text and "ada:" not in text

    interaction = yaml.safe_load(text)["interactions"][0]
    request_headers = {name.lower() for name in interaction["request"]["headers"]}
    response_headers = {name.lower() for name in interaction["response"]["headers"]}
    assert not any(is_secret_name(name) for name in request_headers | response_headers)
    assert "x-trace" in request_headers and "content-type" in request_headers  # the rest is kept
    assert "x-served-by" in response_headers and "content-type" in response_headers
    assert interaction["request"]["uri"] == "http://local-model/v1/chat/completions?api-version=2024-10-21"
    assert json.loads(interaction["request"]["body"])["max_tokens"] == 5

    monkeypatch.setenv("SO_MIDDLEWARE_RECORD_MODE", "none")
    loopback.stop()  # replayed from the scrubbed recording, or it fails
    with recorder(tmp_path).use_cassette("scrub.yaml") as cassette:
        assert call(port) == "Hello"
        assert cassette.play_count == 1


@pytest.mark.parametrize(
    ("name", "secret"),
    [("Authorization", True), ("x-goog-api-key", True), ("api_key", True), ("Ocp-Apim-Subscription-Key", True),
     ("KEY", True), ("X-Amz-Security-Token", True), ("x-client-secret", True), ("Set-Cookie", True),
     ("password", True), ("X-Amz-Signature", True), ("x-amz-credential", True),
     ("content-type", False), ("x-served-by", False), ("api-version", False), ("model", False)],
)  # fmt: skip
def test_secret_names_by_pattern(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret
    assert {"key", "token", "secret", "auth", "password", "signature", "cookie"} <= set(SECRET_NAME_PARTS)


def test_record_mode_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SO_MIDDLEWARE_RECORD_MODE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    assert recorder(tmp_path).record_mode == "once"
    monkeypatch.setenv("CI", "1")
    assert recorder(tmp_path).record_mode == "none"
    monkeypatch.setenv("SO_MIDDLEWARE_RECORD_MODE", "new_episodes")
    assert recorder(tmp_path).record_mode == "new_episodes"
