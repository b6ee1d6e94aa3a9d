"""Every verb that talks to Redis: one line, never a traceback, when Redis is not there or the URL is
not one; one rule for the URL (--redis, else FAIRWAY_REDIS_URL); a closed pipe is not an error."""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from fairway.queue.access.client import Client
from fairway.queue.access.producer import Producer
from support.cli import fairway

REDIS_VERBS = [
    ["queues"],
    ["tenants"],
    ["enqueue", "noop"],
    ["pause", "high"],
    ["continue", "high"],
    ["failed", "list", "--queue", "default"],
    ["failed", "retry", "abc", "--queue", "default"],
    ["failed", "forget", "abc", "--queue", "default"],
    ["tenant", "show", "42"],
    ["tenant", "set", "42", "--weight", "2"],
    ["tenant", "reset", "42"],
    ["dashboard", "--port", "0"],
]
# A worker waits for an unreachable Redis (it may start first); a URL or reply that cannot work ends it.
WRONG_URL_VERBS = [*REDIS_VERBS, ["worker", "--queues", "default", "--burst"]]


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


@pytest.fixture(scope="module")
def not_redis() -> Iterator[int]:
    """A port where something else listens (an HTTP server): not Redis."""
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()


@pytest.mark.parametrize("verb", WRONG_URL_VERBS, ids=lambda v: " ".join(v))
@pytest.mark.parametrize("case", ["http-scheme", "database-99", "not-redis", "bad-port", "port-0"])
def test_no_url_port_or_reply_gives_a_traceback(verb: list[str], case: str, redis_url: str, not_redis: int) -> None:
    """Each URL a user could mistype, or a port where another service answers: one line, exit 2."""
    base = redis_url.rsplit("/", 1)[0]
    url = {
        "http-scheme": base.replace("redis://", "http://") + "/0",
        "database-99": base + "/99",
        "not-redis": f"redis://127.0.0.1:{not_redis}/0",
        "bad-port": "redis://127.0.0.1:notaport/0",
        "port-0": "redis://127.0.0.1:0/0",
    }[case]
    out = fairway(*verb, "--redis", url)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr, out.stderr
    lines = [line for line in out.stderr.strip().splitlines() if "INFO" not in line]
    assert len(lines) == 1, out.stderr
    words = {
        "http-scheme": "is not a Redis URL",
        "database-99": "no such database",
        "not-redis": "does not answer as Redis does",
        "bad-port": "is not a usable Redis URL",
        "port-0": "has port 0",
    }[case]
    assert words in lines[0]


def test_the_dashboard_checks_its_port_before_printing_its_url(redis_url: str) -> None:
    taken = socket.create_server(("127.0.0.1", 0))
    port = taken.getsockname()[1]
    try:
        out = fairway("dashboard", "--redis", redis_url, "--port", str(port))
    finally:
        taken.close()
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "http://" not in out.stdout, "it printed a URL that leads to someone else's service"
    assert f"cannot listen on 127.0.0.1:{port}" in out.stderr and "--port" in out.stderr


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


def test_every_flag_and_argument_of_every_verb_says_what_it_is() -> None:
    import argparse

    from fairway.cli import build_parser

    parser = build_parser()
    (verbs,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    undocumented = [
        f"{verb} {action.dest}"
        for verb, sub in verbs.choices.items()
        for action in sub._actions
        if not isinstance(action, argparse._HelpAction) and not action.help
    ]
    assert undocumented == []


def test_failed_retry_takes_ids_after_its_options(redis_url: str) -> None:
    from support.workers import run_in_process

    job_id = Client(redis_url).enqueue("fail", queue="default")
    run_in_process(redis_url, queues=["default"], burst=True)
    out = fairway("failed", "retry", "--queue", "default", job_id, "--redis", redis_url)
    assert out.returncode == 0, out.stderr
    assert fairway("failed", "forget", "--queue", "default", "--redis", redis_url, "x", "y").returncode == 1
    assert "unrecognized arguments: --nope" in fairway("queues", "--nope").stderr


def test_the_worker_says_what_it_serves_when_it_starts_and_why_it_stops(redis_url: str) -> None:
    import signal
    import time

    from support.workers import wait_until, worker_env

    admin = Client(redis_url).redis
    admin.acl_setuser("w", enabled=True, passwords=["+s3cret"], keys=["*"], channels=["*"], commands=["+@all"])
    try:
        url = redis_url.replace("redis://", "redis://w:s3cret@")
        Client(url).enqueue("noop", queue="high")
        cmd = [sys.executable, "-m", "fairway.cli", "worker", "--redis", url, "--queues", "high,default"]
        cmd += ["--weight", "high=3", "--concurrency", "2", "--block-for", "1"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=worker_env(url))
        assert wait_until(lambda: admin.llen("fairway:{high}:ready") == 0, 15)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
    finally:
        admin.acl_deluser("w")
    assert proc.returncode == 0
    assert "Redis redis://w:***@" in err and "s3cret" not in err + out
    assert "started: queues high(weight 3), default(weight 1) (weighted)" in err
    assert "concurrency 2" in err and "handlers " in err and "noop" in err
    assert "SIGTERM received" in err and "stopped after 1 job (SIGTERM)" in err
    (line,) = out.splitlines()
    assert line[:4].isdigit() and "T" in line.split()[0] and line.split()[1] == "ok", line


@pytest.mark.parametrize(
    ("verb", "says"),
    [
        (["enqueue", "noop", "--count", "0"], "argument --count: 0 is too small"),
        (["enqueue", "noop", "--max-tries", "0"], "--max-tries: max_tries 0 is out of range"),
        (["enqueue", "noop", "--timeout", "0"], "--timeout: timeout 0.0 s is out of range"),
        (["failed", "list", "--limit", "-1"], "argument --limit: -1 is too small"),
        (["tenants", "--window", "0"], "argument --window: 0 is too small"),
        (["tenants", "--limit", "x"], "argument --limit: 'x' is not a whole number"),
        (["tenants", "--prefix", "x{"], "--prefix: '@x{' is not a tenant group"),
        (["queues", "--queues", "bad{"], "'bad{' is not a queue name"),
    ],
)
def test_counts_limits_and_names_are_checked_by_every_verb(redis_url: str, verb: list[str], says: str) -> None:
    out = fairway(*verb, "--redis", redis_url)
    assert out.returncode in (1, 2) and says in out.stderr and "Traceback" not in out.stderr


def test_empty_tables_say_so(redis_url: str) -> None:
    assert fairway("queues", "--redis", redis_url).stdout.startswith("no queues yet")
    assert fairway("tenants", "--redis", redis_url).stdout.strip() == "no tenants of @tenant- active in the last 5m00s"


def test_dev_says_what_it_installs_before_each_install() -> None:
    """`./dev run` once sat silent for a minute behind `pip -q`: every install step is announced."""
    from pathlib import Path

    lines = (Path(__file__).resolve().parents[3] / "dev").read_text().splitlines()
    installs = [
        i
        for i, line in enumerate(lines)
        if any(k in line for k in ("pip install", "npm ci", "apt-get install", "-m venv"))
    ]
    assert len(installs) >= 5
    for i in installs:
        assert any('echo "dev: ' in line for line in lines[max(0, i - 3) : i + 1]), (
            f"dev line {i + 1} installs silently"
        )
