"""Every verb that talks to Redis: one line, never a traceback, when Redis is not there or the URL is
not one; one rule for the URL (--redis, else FAIRWAY_REDIS_URL); a closed pipe is not an error."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fairway.queue.client import Client
from fairway.queue.producer import Producer

REDIS_VERBS = [
    ["queues"],
    ["tenants"],
    ["enqueue", "noop"],
    ["pause", "high"],
    ["continue", "high"],
    ["failed", "list", "--queue", "default"],
    ["failed", "retry", "abc", "--queue", "default"],
]


def fairway(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fairway.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize("verb", REDIS_VERBS, ids=lambda v: " ".join(v))
def test_an_unreachable_redis_is_one_line_naming_the_masked_url_exit_2(verb: list[str]) -> None:
    out = fairway(*verb, "--redis", "redis://app:hunter2@127.0.0.1:1/0")
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "cannot reach Redis at redis://app:***@127.0.0.1:1/0" in out.stderr and "hunter2" not in out.stderr


@pytest.mark.parametrize("verb", REDIS_VERBS, ids=lambda v: " ".join(v))
def test_a_url_that_is_not_one_is_one_line_exit_2(verb: list[str]) -> None:
    out = fairway(*verb, "--redis", "notaurl")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "'notaurl' is not a Redis URL" in out.stderr


def test_fairway_redis_url_is_the_default_of_every_verb(redis_url: str) -> None:
    env = {"FAIRWAY_REDIS_URL": redis_url}
    assert fairway("enqueue", "noop", "--queue", "from-env", env=env).returncode == 0
    out = fairway("queues", env=env)
    assert out.returncode == 0 and "from-env" in out.stdout
    assert "FAIRWAY_REDIS_URL" in fairway("queues", "--help").stdout


def test_version() -> None:
    out = fairway("--version")
    assert out.returncode == 0 and out.stdout.strip() == "fairway 0.1.0"


def test_a_closed_pipe_ends_a_verb_quietly(redis_url: str) -> None:
    producer = Producer(Client(redis_url).redis)
    producer.remember([f"queue-{i:05d}" for i in range(5000)])  # far more than a pipe buffer of lines
    proc = subprocess.Popen(
        [sys.executable, "-m", "fairway.cli", "queues", "--redis", redis_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith("QUEUE")
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    assert "Traceback" not in err and "BrokenPipe" not in err
