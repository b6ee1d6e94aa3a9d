"""A worker's Prometheus endpoint, scraped over HTTP from a real worker process and parsed with
prometheus_client's own parser: names, labels, values, and bounded label values."""

from __future__ import annotations

import socket

from fairway.queue.access.client import Client
from fairway.queue.connection import connect
from support.redis_procs import free_port
from support.scrape import scrape, value
from support.workers import start_worker, wait_until


def reserved(port: int) -> float:
    try:
        return value(scrape(port), "fairway_reserved_jobs_total")
    except OSError:  # not listening yet
        return 0.0


def test_a_worker_exports_jobs_times_slots_and_round_trips(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue_many("noop", [[]] * 20, queue="high")
    client.enqueue_many("fail", [[]] * 3, queue="low")
    client.enqueue("no.such.handler", queue="low")
    for n in range(5):  # handler names from producers never become label values
        client.enqueue(f"made_up_{n}", queue="low")
    connect(redis_url).rpush("fairway:{low}:ready", b"not json")
    connect(redis_url).rpush("fairway:{low}:notify", b"1")
    port = free_port()
    worker = start_worker(redis_url, "--queues", "high,low", "--concurrency", "4", "--metrics-port", str(port))
    try:
        assert wait_until(lambda: reserved(port) >= 30, 20)
        samples = scrape(port)
    finally:
        worker.terminate()
        worker.communicate(timeout=30)
    assert value(samples, "fairway_jobs_finished_total", queue="high", handler="noop", outcome="ok") == 20
    assert value(samples, "fairway_jobs_finished_total", queue="low", handler="fail", outcome="failed") == 3
    # jobs for handlers this worker lacks go back for another (a rolling deploy), never as label values
    assert (
        value(samples, "fairway_jobs_finished_total", queue="low", handler="unregistered", outcome="handed_back") == 6
    )
    assert value(samples, "fairway_jobs_finished_total", queue="low", handler="unregistered", outcome="malformed") == 1
    handlers = {dict(labels).get("handler") for (name, labels) in samples if name == "fairway_jobs_finished_total"}
    assert handlers == {"noop", "fail", "unregistered"}
    assert value(samples, "fairway_job_run_seconds_count", queue="high") == 20
    assert value(samples, "fairway_job_run_seconds_bucket", queue="high", le="+Inf") == 20
    assert value(samples, "fairway_job_wait_seconds_count", queue="high") == 20
    assert 0 < value(samples, "fairway_job_wait_seconds_sum", queue="high") < 60
    trips = value(samples, "fairway_reserve_round_trips_total")
    assert 0 < trips <= 30 and value(samples, "fairway_reserved_jobs_total") == 30
    assert value(samples, "fairway_free_slots") == 4 and value(samples, "fairway_jobs_in_flight") == 0
    assert ("fairway_redis_errors_total", ()) in samples


def test_a_taken_port_is_a_warning_not_a_dead_worker(redis_url: str) -> None:
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        Client(redis_url).enqueue_many("noop", [[]] * 3, queue="high")
        worker = start_worker(redis_url, "--queues", "high", "--burst", "--metrics-port", str(port))
        out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0
    assert f"metrics not served: cannot listen on port {port}" in err
    assert out.count('"outcome": "ok"') == 3
