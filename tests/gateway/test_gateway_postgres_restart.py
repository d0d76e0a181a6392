"""The PostgreSQL store after its database restarted (a restart, a failover): the connections its
pool held were dropped by the server, and every request after the server is back still succeeds.

The real server the suite starts is restarted with `pg_ctl restart` between two rounds of traffic
through a gateway served over a real socket, driven with the unmodified OpenAI SDK."""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai

ROUNDS = 24  # requests after the restart, more than the pool's connections, several at once


def _restart(postgres_url: str) -> None:
    """Restart the server behind `postgres_url` (fast: its clients' connections are cut) and wait for it."""
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        row = conn.execute("SHOW data_directory").fetchone()
    assert row is not None
    found = shutil.which("pg_ctl") or str(sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))[-1])
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []  # as the fixture started it
    # the server's output to its log, as the fixture started it: a pipe held by the server would never close
    subprocess.run([*as_user, found, "-D", row[0], "-l", f"{row[0]}/log", "-m", "fast", "-w", "restart"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)  # fmt: skip


def test_every_request_succeeds_after_the_database_restarts(postgres_url: str, fake_gateway: Any) -> None:
    _, gateway = fake_gateway(store=postgres_url)
    client = openai.OpenAI(base_url=gateway.base_url, api_key="none", max_retries=0, timeout=60)
    with ThreadPoolExecutor(6) as pool:  # several requests at once: the pool holds several connections
        ids = list(pool.map(lambda _: client.responses.create(model="m", input="before").id, range(6)))
        _restart(postgres_url)
        retrieved = list(pool.map(lambda n: client.responses.retrieve(ids[n % len(ids)]).id, range(ROUNDS)))
        created = list(pool.map(lambda _: client.responses.create(model="m", input="after").status, range(6)))
    assert retrieved == [ids[n % len(ids)] for n in range(ROUNDS)]
    assert created == ["completed"] * 6
    client.close()
