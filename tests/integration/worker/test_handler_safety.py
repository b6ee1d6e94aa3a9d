"""No handler can end the worker (issue 21's defects 5-7): an exception whose str() raises or recurses,
one that takes longer to print than the job's timeout, SystemExit and KeyboardInterrupt each become a
failed attempt with a safe description, at concurrency 1 (the handler in the main thread, under
SIGALRM) and in the pool; the next job runs and the worker exits 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from support.workers import done_keys, job_lines, start_worker

KINDS = ["unprintable", "recursive", "slow_to_print", "exit", "keyboard"]


@pytest.mark.parametrize("concurrency", ["1", "2"])
def test_no_exception_a_handler_raises_ends_the_worker(redis_url: str, tmp_path: Path, concurrency: str) -> None:
    client = Client(redis_url)
    for kind in KINDS:
        # In one slot the 1 s alarm would fire while the slow exception is printed (it must be
        # disarmed first); in the pool a thread that is still printing is still running, so there
        # it gets time to finish.
        timeout = 3 if kind == "slow_to_print" and concurrency != "1" else 1
        client.enqueue("raise_unprintable", kind, job_id=f"bad-{kind}", timeout=timeout)
    client.enqueue("record", "after")
    config = tmp_path / "w.yaml"
    config.write_text("kill_grace_s: 5\n")  # the slow printer must not be taken for a stuck job
    worker = start_worker(
        redis_url, "--queues", "default", "--burst", "--concurrency", concurrency, "--config", str(config)
    )
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err[-3000:]
    assert done_keys(redis_url) == ["after"], "the worker went on to the next job"
    outcomes = {line["id"]: (line["outcome"], line.get("error", "")) for line in job_lines(out)}
    assert {outcomes[f"bad-{kind}"][0] for kind in KINDS} == {"failed"}
    records = {r["id"]: r for r in Inspector(connect(redis_url)).failed_records("default")}
    assert set(records) == {f"bad-{kind}" for kind in KINDS}
    assert records["bad-unprintable"]["exception"] == "_Unprintable"
    assert "whose str() raised" in records["bad-unprintable"]["message"]
    assert records["bad-recursive"]["exception"] == "_Recursive"
    assert records["bad-slow_to_print"]["message"] == "slow to print", "described in full, not cut by the alarm"
    assert (records["bad-exit"]["exception"], records["bad-exit"]["message"]) == ("SystemExit", "3")
    assert records["bad-keyboard"]["exception"] == "KeyboardInterrupt"
    assert all(r["traceback"] for r in records.values())
