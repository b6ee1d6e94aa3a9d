"""Running real `fairway worker` processes (and in-process workers for statistics) in tests."""

from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from fairway.queue.connection import connect
from fairway.queue.runtime.fetch import fetcher_for
from fairway.queue.runtime.handlers import registry
from fairway.queue.runtime.worker import Worker
from fairway.resource.worker_settings import WorkerSettings

TESTS = Path(__file__).resolve().parents[1]


def worker_env(redis_url: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "FAIRWAY_TEST_REDIS": redis_url, "PYTHONUNBUFFERED": "1"}


class WorkerProcess(subprocess.Popen[str]):
    """A worker whose output goes to files, so a chatty worker never blocks on a full pipe."""

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        self._out = tempfile.TemporaryFile("w+")  # noqa: SIM115  (lives as long as the process)
        self._err = tempfile.TemporaryFile("w+")  # noqa: SIM115
        super().__init__(cmd, env=env, stdout=self._out, stderr=self._err, text=True)

    def stderr_so_far(self) -> str:
        """What it wrote to stderr until now (pread: the file offset it shares with the child stays)."""
        size = os.fstat(self._err.fileno()).st_size
        return os.pread(self._err.fileno(), size, 0).decode(errors="replace")

    def communicate(self, input: str | None = None, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        self._out.seek(0)
        self._err.seek(0)
        return self._out.read(), self._err.read()


def start_worker(
    redis_url: str, *args: str, test_redis: str | None = None, env: dict[str, str] | None = None
) -> WorkerProcess:
    """A real worker process with the test handlers loaded and JSON job lines on stdout."""
    cmd = [
        sys.executable,
        "-m",
        "fairway.cli",
        "worker",
        "--redis",
        redis_url,
        "--handlers",
        "support.jobs",
        "--log-format",
        "json",
        "--metrics-port",
        "0",
        "--health-port",
        "0",
        *args,
    ]
    return WorkerProcess(cmd, {**worker_env(test_redis or redis_url), **(env or {})})


def job_lines(stdout: str, event: str = "job.finished") -> list[dict[str, Any]]:
    """The worker's JSON log lines of one kind: finished jobs by default, or "job.malformed"."""
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("event") == event]


def run_in_process(redis_url: str, seed: int = 1, **fields: Any) -> list[dict[str, Any]]:
    """Run a worker in this process until it stops (burst or max_jobs); its JSON job lines."""
    import fairway.builtins  # noqa: F401

    settings = WorkerSettings.model_validate(
        {"redis_url": redis_url, "log_format": "json", "metrics_port": 0, **fields}
    )
    out = io.StringIO()
    fetcher = fetcher_for(connect(redis_url, settings.cluster), settings, random.Random(seed))
    Worker(settings, fetcher, registry, out=out).run()
    return job_lines(out.getvalue())


def wait_until(predicate: Any, timeout: float = 10.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def done_keys(redis_url: str) -> list[str]:
    return [k.decode() for k in redis.Redis.from_url(redis_url).lrange("test:done", 0, -1)]


def started_keys(redis_url: str) -> list[str]:
    return [k.decode() for k in redis.Redis.from_url(redis_url).lrange("test:started", 0, -1)]


def drain_under_kill_9(
    redis_url: str,
    keys: list[str],
    worker_args: list[str],
    *,
    workers: int,
    pause_s: tuple[float, float],
    max_kills: int | None = None,
    kill_for_s: float | None = None,
    seed: int = 1,
    timeout_s: float = 120,
) -> int:
    """Keep `workers` real worker processes running until every key in `keys` is done, SIGKILLing a
    random one after each random pause while kills are allowed (at most `max_kills`, or for
    `kill_for_s` seconds). Returns the number of kills."""
    rng = random.Random(seed)
    running: list[WorkerProcess] = []
    kills = 0
    started = time.monotonic()
    try:
        while len(set(done_keys(redis_url))) < len(keys):
            assert time.monotonic() - started < timeout_s, f"only {len(set(done_keys(redis_url)))} of {len(keys)} done"
            running = [w for w in running if w.poll() is None]
            while len(running) < workers:
                running.append(start_worker(redis_url, *worker_args))
            time.sleep(rng.uniform(*pause_s))
            killing = (max_kills is None or kills < max_kills) and (
                kill_for_s is None or time.monotonic() - started < kill_for_s
            )
            if killing:
                victim = rng.choice(running)
                victim.send_signal(signal.SIGKILL)
                victim.communicate(timeout=10)
                kills += 1
    finally:
        for worker in running:
            worker.terminate()
            worker.communicate(timeout=10)
    return kills
