"""The same document enqueued twice (a producer whose enqueue timed out sends it again, as
docs/protocol.md advises): a copy taken while another copy of it is held by a worker is the same job
and is dropped; a copy taken after the first was settled runs as a job of its own, from attempt 1.
Never do the copies share a lease or an attempt counter (issue 21's defect 10: the second copy was
failed as MaxAttemptsExceeded and its failure removed the running copy's reservation)."""

from __future__ import annotations

from fairway.queue.access.inspector import Inspector
from fairway.queue.access.producer import Producer
from fairway.queue.connection import connect
from fairway.queue.protocol.job import new_job
from support.workers import job_lines, start_worker, started_keys


def enqueue_twice(redis_url: str, seconds: float) -> None:
    document = new_job("record", "default", ["same", seconds], {}, job_id="same-doc").encode()
    producer = Producer(connect(redis_url))
    producer.enqueue("default", document)
    producer.enqueue("default", document)  # the very same bytes


def test_a_copy_taken_while_the_other_runs_is_the_same_job(redis_url: str) -> None:
    enqueue_twice(redis_url, 0.5)
    worker = start_worker(redis_url, "--queues", "default", "--concurrency", "2", "--burst")
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err[-2000:]
    assert started_keys(redis_url) == ["same"], "one run"
    assert [(line["outcome"], line["attempt"]) for line in job_lines(out)] == [("ok", 1)]
    (stats,) = Inspector(connect(redis_url)).stats(["default"])
    assert (stats.ready, stats.reserved, stats.failed) == (0, 0, 0)


def test_a_copy_taken_after_the_first_was_settled_runs_as_its_own_job(redis_url: str) -> None:
    enqueue_twice(redis_url, 0.0)
    worker = start_worker(redis_url, "--queues", "default", "--burst")  # one slot: one copy at a time
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err[-2000:]
    assert started_keys(redis_url) == ["same", "same"]
    assert [(line["outcome"], line["attempt"]) for line in job_lines(out)] == [("ok", 1), ("ok", 1)]
    (stats,) = Inspector(connect(redis_url)).stats(["default"])
    assert (stats.reserved, stats.failed) == (0, 0)
