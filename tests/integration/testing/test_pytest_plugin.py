"""fairway.testing as a user meets it: a project's own test file, run by pytest in a fresh process
from a folder of its own (the plugin loaded through its entry point, nothing from this repository's
conftest), with a real embedded Redis: drain() runs sync and async handlers, retries, failures and
tenant jobs, and results are read through the handle."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.docs import blocks

USER_HANDLERS = """
import fairway


@fairway.job(name="shop.total")
def total(prices):
    return sum(prices)


@fairway.job(name="shop.notify")
async def notify(user):
    return f"sent to {user}"


@fairway.job(name="shop.charge", tries=2, backoff=[0])
def charge(card):
    if card == "declined":
        raise ValueError("card declined")
    return "charged"
"""

USER_TESTS = """
import pytest

import fairway
import shop  # noqa: F401  (registers the handlers)
from fairway.testing import running_job


def test_drain_runs_what_was_enqueued_with_results(fairway_client, fairway_worker):
    total = fairway_client.enqueue("shop.total", [3, 4, 5], result_ttl=60)
    notify = fairway_client.enqueue("shop.notify", "ada", tenant="acme", result_ttl=60)
    ran = {r.id: r for r in fairway_worker.drain()}
    assert ran[total].outcome == "ok" and ran[total].value == 12
    assert ran[notify].value == "sent to ada" and ran[notify].tenant == "acme"
    assert total.result(timeout=1) == 12 and notify.status() == "done"


def test_failures_and_retries_come_back_with_their_exception(fairway_client, fairway_worker):
    job = fairway_client.enqueue("shop.charge", "declined", result_ttl=60)
    ran = fairway_worker.drain()
    assert [(r.attempt, r.outcome) for r in ran] == [(1, "retry"), (2, "failed")]
    assert isinstance(ran[-1].error, ValueError) and str(ran[-1].error) == "card declined"
    with pytest.raises(fairway.JobFailedError, match="ValueError: card declined"):
        job.result(timeout=1)


def test_each_test_starts_with_an_empty_redis(fairway_client, fairway_worker):
    assert fairway_client.redis.dbsize() == 0 and fairway_worker.drain() == []


def test_a_handler_called_with_a_job_context():
    with running_job(tenant="42") as job:
        assert fairway.current_job().tenant == "42"
    assert job.context.queue == "tenant-42"
"""


def test_a_users_project_tests_its_handlers_with_the_plugin(tmp_path: Path) -> None:
    (tmp_path / "shop.py").write_text(USER_HANDLERS)
    (tmp_path / "test_shop.py").write_text(USER_TESTS)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "FAIRWAY_"))}
    env["PYTHONPATH"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "4 passed" in result.stdout


def test_the_readme_example_test_passes_as_written(tmp_path: Path) -> None:
    [example] = [b for b in blocks() if b.where.startswith("README.md") and "fairway_worker.drain()" in b.text]
    (tmp_path / "test_readme_example.py").write_text(example.text)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "FAIRWAY_"))}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout[-4000:] + result.stderr[-2000:]
