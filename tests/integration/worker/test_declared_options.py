"""`@fairway.job(tries=, timeout=, backoff=, queue=)` with real worker processes: the handler's tries,
backoff and timeout apply over the worker's defaults, the job's own options over the handler's, and
`client.enqueue(func, ...)` puts the job on the handler's declared queue."""

from __future__ import annotations

import importlib
import os
import sys
import time
from pathlib import Path

from fairway.queue.access.client import Client
from support.workers import job_lines, start_worker, worker_env

DECLARING = '''
import time
from pathlib import Path

import fairway


@fairway.job(tries=3, backoff=[1, 0])
def declared_flaky(path):
    """Fails until its third attempt (counted in a file)."""
    counter = Path(path)
    n = int(counter.read_text() or 0) + 1 if counter.exists() else 1
    counter.write_text(str(n))
    if n < 3:
        raise RuntimeError(f"attempt {n} fails")


@fairway.job(timeout=0.5)
def declared_slow():
    time.sleep(5)


@fairway.job(name="mail.send", queue="mail")
def send(to):
    return to
'''


def declaring_module(tmp_path: Path, name: str) -> dict[str, str]:
    (tmp_path / f"{name}.py").write_text(DECLARING)
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path), worker_env("")["PYTHONPATH"]])}


def test_a_handlers_declared_options_rule_its_jobs(redis_url: str, tmp_path: Path) -> None:
    env = declaring_module(tmp_path, "declaring_jobs")
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("declaring_jobs")
    finally:
        sys.path.remove(str(tmp_path))
    client = Client(redis_url)
    flaky = client.enqueue("declared_flaky", str(tmp_path / "count"), queue="default")
    slow = client.enqueue("declared_slow", queue="default")
    slow_own = client.enqueue("declared_slow", queue="default", timeout=2, max_tries=2)  # the job's own options win
    sent = client.enqueue(module.send, "a@example.com")  # the function itself: its name, its queue
    assert client.redis.llen("fairway:{mail}:ready") == 1 and client.redis.llen("fairway:{default}:ready") == 3

    started = time.monotonic()
    worker = start_worker(
        redis_url, "--queues", "default,mail", "--handlers", "declaring_jobs", "--burst", env=env
    )  # fmt: skip  (one slot: SIGALRM stops a sync job at its timeout)
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err[-2000:]
    lines = job_lines(out)
    by_job: dict[str, list[tuple[int, str]]] = {}
    for line in lines:
        by_job.setdefault(line["id"], []).append((line["attempt"], line["outcome"]))
    assert by_job[flaky] == [(1, "retry"), (2, "retry"), (3, "ok")], "tries=3 over the worker's 1"
    assert by_job[slow] == [(1, "failed")] and "0.5 s timeout" in _error(lines, slow), "timeout=0.5 over 60"
    assert by_job[slow_own] == [(1, "retry"), (2, "failed")] and "2 s timeout" in _error(lines, slow_own)
    assert by_job[sent] == [(1, "ok")] and _queue(lines, sent) == "mail"
    assert time.monotonic() - started >= 1, "flaky's first retry waited its declared 1 s"


def _error(lines: list[dict[str, object]], job_id: str) -> str:
    return str([line for line in lines if line["id"] == job_id][-1].get("error", ""))


def _queue(lines: list[dict[str, object]], job_id: str) -> str:
    return str(next(line["queue"] for line in lines if line["id"] == job_id))


def test_a_bad_declared_default_stops_the_worker_in_one_line(redis_url: str, tmp_path: Path) -> None:
    (tmp_path / "bad_defaults.py").write_text("import fairway\n\n\n@fairway.job(tries=0)\ndef x():\n    pass\n")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), worker_env("")["PYTHONPATH"]])}
    worker = start_worker(redis_url, "--queues", "default", "--handlers", "bad_defaults", "--burst", env=env)
    _, err = worker.communicate(timeout=30)
    assert worker.returncode != 0 and "Traceback" not in err, err
    (line,) = [line for line in err.splitlines() if line.startswith("fairway:")]
    assert f"handler module 'bad_defaults' failed while importing, at {tmp_path / 'bad_defaults.py'}:4" in line
    assert line.endswith(
        "ValueError: @fairway.job for 'x': max_tries 0 is out of range: give a whole number from 1 to 1000"
    )
