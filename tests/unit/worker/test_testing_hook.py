"""fairway.testing.running_job: the supported way to unit-test a handler that calls current_job()."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime

import pytest

import fairway
from fairway.testing import running_job


def test_current_job_outside_a_worker_names_the_hook() -> None:
    with pytest.raises(RuntimeError, match=r"fairway\.testing\.running_job"):
        fairway.current_job()


def test_running_job_is_current_inside_and_gone_after() -> None:
    when = datetime(2026, 1, 2, tzinfo=UTC)
    with running_job(job_id="j1", tenant="42", attempt=2, max_tries=3, enqueued_at=when) as job:
        current = fairway.current_job()
        assert (current.id, current.queue, current.tenant, current.attempt, current.max_tries) == (
            "j1", "tenant-42", "42", 2, 3,
        )  # fmt: skip
        assert current.enqueued_at == when and current.served_name == "@tenant-"
        current.progress(0.5, "half")
    assert [(r.fraction, r.message, r.attempt) for r in job.reports] == [(0.5, "half", 2)]
    with pytest.raises(RuntimeError):
        fairway.current_job()


def test_each_thread_and_task_sees_its_own() -> None:
    seen: list[str] = []

    def in_thread(name: str) -> None:
        with running_job(job_id=name):
            seen.append(fairway.current_job().id)

    threads = [threading.Thread(target=in_thread, args=(f"t{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    async def in_task(name: str) -> str:
        with running_job(job_id=name):
            await asyncio.sleep(0)
            return fairway.current_job().id

    async def both() -> list[str]:
        return list(await asyncio.gather(in_task("a"), in_task("b")))

    assert sorted(seen) == ["t0", "t1", "t2"] and asyncio.run(both()) == ["a", "b"]


def test_counts_start_at_one() -> None:
    with pytest.raises(ValueError, match="count from 1"), running_job(attempt=0):
        pass
