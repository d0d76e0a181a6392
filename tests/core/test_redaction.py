"""The one redaction rule: a table of what is masked and what is left, read by every surface
(tests/integration/test_redaction_surfaces.py checks the surfaces against the same secrets)."""

from __future__ import annotations

import pytest

from so_middleware.core import is_secret_name, redact, redact_url

# (text, shown): each surface shows a secret-bearing text as the core's `redact` does.
TABLE = [
    ("http://u:pw@host:1/v1", "http://***@host:1/v1"),
    ("postgresql://gw:s3cret@db/gw", "postgresql://***@db/gw"),
    ("https://ghp_token123@host/v1", "https://***@host/v1"),  # a token sent as the user name
    ("https://user:pw@host/v1?api_key=abc", "https://***@host/v1?api_key=***"),
    ("http://h/v1?x=1&key=abc&sig=zz#top", "http://h/v1?x=1&key=***&sig=***#top"),
    ("http://h/v1?X-Amz-Security-Token=t0k&page=2", "http://h/v1?X-Amz-Security-Token=***&page=2"),
    ("Authorization: Bearer eyJhbGci.x.y, then", "Authorization: Bearer ***, then"),
    ("Incorrect API key provided: sk-abc123", "Incorrect API key provided: sk-***"),
    ("sk-ant-api03-xyz and sk-proj-1234567890", "sk-*** and sk-***"),
    ("http://127.0.0.1:8080/v1 is fine", "http://127.0.0.1:8080/v1 is fine"),
    ("a task-list, a risk-free plan", "a task-list, a risk-free plan"),
    ("write to me@example.com", "write to me@example.com"),
    # a compact JSON body stays JSON: no pattern reaches across a quote
    ('{"a":"http://h:8080","b":"me@x"}', '{"a":"http://h:8080","b":"me@x"}'),
    ('{"u":"http://a:b@h/v1?token=q"}', '{"u":"http://***@h/v1?token=***"}'),
]


@pytest.mark.parametrize(("text", "shown"), TABLE)
def test_redact(text: str, shown: str) -> None:
    assert redact(text) == shown


@pytest.mark.parametrize(("text", "shown"), TABLE[:6])  # the rows that are URLs alone
def test_redact_url_is_the_same_rule(text: str, shown: str) -> None:
    assert redact_url(text) == shown


def test_given_secrets_are_masked_when_long_enough() -> None:
    assert redact("key abcd1234 and abcd1234x", ["abcd1234"]) == "key *** and ***x"
    assert redact("a plain message with an x", ["x"]) == "a plain message with an x"  # too short to be one
    assert redact("abcdefgh abcd", ["abcd", "abcdefgh"]) == "*** ***"  # the longest first


def test_an_unparsable_url_is_still_redacted() -> None:
    assert redact_url("http://u:pw@[::1/v1") == "http://***@[::1/v1"


@pytest.mark.parametrize(
    ("name", "secret"),
    [("Ocp-Apim-Subscription-Key", True), ("x-goog-api-key", True), ("X-Amz-Security-Token", True),
     ("Cookie", True), ("content-type", False), ("page", False)],
)  # fmt: skip
def test_is_secret_name(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret
