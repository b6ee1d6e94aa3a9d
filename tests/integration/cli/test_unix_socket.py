"""Redis on a Unix socket (`unix:///path`, as the docs offer): the producer, a worker and the read
verbs work on it as on TCP. (Every verb once crashed with a traceback there: TCP keepalive was passed
to the socket connection, which takes no such option.)"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.cli import fairway
from support.workers import job_lines, start_worker, wait_until


@pytest.fixture
def unix_url(tmp_path: Path) -> Iterator[str]:
    sock = tmp_path / "redis.sock"
    server = subprocess.Popen(
        ["redis-server", "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700", "--save", ""],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_until(sock.exists, 10)
        yield f"unix://{sock}"
    finally:
        server.terminate()
        server.wait(10)


def test_enqueue_work_and_read_on_a_unix_socket(unix_url: str) -> None:
    enqueued = fairway("enqueue", "--queue", "default", "--count", "5", "noop", redis=unix_url)
    assert enqueued.returncode == 0 and "Traceback" not in enqueued.stderr, enqueued.stderr
    worker = start_worker(unix_url, "--queues", "default", "--burst")
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0 and "Traceback" not in err, err[-2000:]
    assert [line["outcome"] for line in job_lines(out)] == ["ok"] * 5
    rows = json.loads(fairway("queues", "--json", redis=unix_url).stdout)
    assert [(r["queue"], r["ready"], r["reserved"]) for r in rows] == [("default", 0, 0)]
