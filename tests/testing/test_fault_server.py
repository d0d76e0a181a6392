"""with_retries through the real openai SDK against a loopback server that fails on purpose.

Not cassettes: the point is the failures (resets, cut streams, retry-after), which a recording of a
healthy server does not contain. The server counts requests, so these tests also prove the SDK's own
retries are off under the retry layer.
"""

from __future__ import annotations

import pytest

from so_middleware.testing._faults import FaultServer, completion, status

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_fault_server_records_requests_and_repeats_its_last_entry() -> None:
    import httpx2

    with FaultServer([status(500), completion("x")]) as server, httpx2.Client() as http:
        codes = [http.post(f"{server.base_url}/chat/completions", json={"n": n}).status_code for n in range(3)]
    assert codes == [500, 200, 200]
    assert [request.body for request in server.requests] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert server.requests[0].path == "/v1/chat/completions"
