"""The seed's promise: a noisy tenant only slows itself. Two real workers, fair vs one FIFO queue, same run."""

from __future__ import annotations

import signal
import time
from typing import Any

from fairway.queue.access.client import Client
from fairway.queue.access.figures import percentile
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from support.workers import job_lines, start_worker, wait_until

NOISY_JOBS, SMALL_TENANTS, SMALL_JOBS = 5000, 20, 10


def run(url: str, fair: bool) -> tuple[list[dict[str, Any]], set[str]]:
    """Run the scenario; returns every job line from both workers and the ids of the small tenants' jobs."""
    client = Client(url)
    store = Inspector(connect(url))
    serve = ["--tenants", "tenant-"] if fair else ["--queues", "fifo"]
    workers = [start_worker(url, *serve, "--block-for", "1") for _ in range(2)]
    time.sleep(1.0)  # both workers are up and idle
    target = {"tenant": "A"} if fair else {"queue": "fifo"}
    client.enqueue_many("sleep", [[0.002]] * NOISY_JOBS, **target)
    time.sleep(0.5)
    small: set[str] = set()
    for i in range(SMALL_TENANTS):
        target = {"tenant": f"s{i}"} if fair else {"queue": "fifo"}
        small.update(client.enqueue_many("sleep", [[0.002]] * SMALL_JOBS, **target))
    if fair:

        def small_done() -> bool:
            figures = {f.tenant: f for f in store.tenant_figures("tenant-")}
            return all(figures.get(f"s{i}") and figures[f"s{i}"].completed == SMALL_JOBS for i in range(SMALL_TENANTS))
    else:

        def small_done() -> bool:
            stats = store.stats(["fifo"])[0]
            return stats.ready == 0 and stats.reserved == 0

    try:
        assert wait_until(small_done, 60, 0.05), "the small tenants' jobs did not finish"
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        lines = [line for worker in workers for line in job_lines(worker.communicate(timeout=20)[0])]
    return lines, small


def test_a_noisy_tenant_only_slows_itself(redis_url: str) -> None:
    fair_lines, fair_small = run(redis_url, fair=True)
    connect(redis_url).flushdb()
    fifo_lines, fifo_small = run(redis_url, fair=False)

    small_lines = [line for line in fair_lines if line["id"] in fair_small]
    assert len(small_lines) == SMALL_TENANTS * SMALL_JOBS
    last_small_finish = max(line["finished_at"] for line in small_lines)
    noisy_before = sum(1 for line in fair_lines if line["tenant"] == "A" and line["finished_at"] <= last_small_finish)
    assert noisy_before < 0.25 * NOISY_JOBS, f"A used {noisy_before} of its {NOISY_JOBS} jobs first"

    fair_p99 = percentile([line["wait_ms"] for line in small_lines], 0.99)
    fifo_p99 = percentile([line["wait_ms"] for line in fifo_lines if line["id"] in fifo_small], 0.99)
    print(
        f"small tenants' p99 wait: fair {fair_p99} ms, FIFO {fifo_p99} ms, ratio {fifo_p99 / max(fair_p99, 1):.1f}x; "
        f"A finished {noisy_before} jobs before the last small one"
    )
    assert fifo_p99 >= 20 * fair_p99


def test_capping_or_throttling_the_noisy_tenant_never_makes_the_quiet_ones_wait_longer(redis_url: str) -> None:
    """The same scenario with the noisy tenant uncapped, capped at 2 and throttled to 200 jobs/s
    (docs/tenants.md): a limit on one tenant only ever leaves the others more room."""
    from fairway.queue.access.tenant_settings import TenantSettingsStore
    from fairway.resource.spec import TenantSettings

    p99 = {}
    for case, settings in (
        ("uncapped", None),
        ("capped", TenantSettings(max_in_flight=2)),
        ("throttled", TenantSettings(rate=200)),
    ):
        connect(redis_url).flushdb()
        if settings is not None:
            TenantSettingsStore(connect(redis_url)).set("tenant-", "A", settings)
        lines, small = run(redis_url, fair=True)
        p99[case] = percentile([line["wait_ms"] for line in lines if line["id"] in small], 0.99)
    print(f"small tenants' p99 wait: {p99}")
    for case in ("capped", "throttled"):
        assert p99[case] <= max(1.5 * p99["uncapped"], p99["uncapped"] + 100), p99
