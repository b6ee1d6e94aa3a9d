"""`fairway demo`: see the point in under a minute, on a private Redis the demo starts itself.

One noisy tenant floods its queue; 0.5 s later twenty quiet tenants enqueue a few jobs each. The same
jobs run twice on two local workers (`fairway up`'s machinery): once through a tenant-fair
supervisor, once through one FIFO queue. The demo prints each quiet tenant's worst wait both ways.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from fairway.local.embedded import EmbeddedRedis
from fairway.local.up import Up
from fairway.queue.access.client import Client
from fairway.queue.access.figures import percentile
from fairway.resource.spec import QueueSupervisorSpec

NOISY_JOBS, QUIET_TENANTS, QUIET_JOBS, JOB_S = 3000, 20, 10, 0.002


def _spec(url: str, fair: bool) -> QueueSupervisorSpec:
    base: dict[str, Any] = {
        "redis": {"url": url},
        "minProcesses": 2,
        "maxProcesses": 2,
        "blockFor": 1,
        "worker": {"handlers": ["fairway.builtins"]},
    }
    base.update({"tenants": {"maxConsecutiveJobs": 5}} if fair else {"queues": ["fifo"]})
    return QueueSupervisorSpec.model_validate(base)


def _run(url: str, fair: bool, logs: Path) -> list[dict[str, Any]]:
    """One scenario end to end; the job lines of every job that ran."""
    client = Client(url)
    client.redis.flushdb()
    up = Up([("demo", _spec(url, fair))], url, log_dir=logs, quiet=True, tick_s=0.2)
    thread = threading.Thread(target=up.run, daemon=True)
    thread.start()
    time.sleep(1.5)  # the two workers start and go idle

    def enqueue(tenant: str, count: int) -> list[str]:
        """`count` jobs of the tenant: its own queue when fair, else the one FIFO queue."""
        if fair:
            return client.enqueue_many("sleep", [[JOB_S]] * count, tenant=tenant)
        return client.enqueue_many("sleep", [[JOB_S]] * count, queue="fifo")

    enqueue("noisy", NOISY_JOBS)
    time.sleep(0.5)
    quiet_ids: set[str] = set()
    for index in range(QUIET_TENANTS):
        quiet_ids.update(enqueue(f"quiet-{index}", QUIET_JOBS))

    def lines() -> list[dict[str, Any]]:
        """The finished jobs the workers have logged: complete lines only (a worker may be writing the
        last one while this reads it)."""
        return [
            json.loads(line)
            for log in logs.glob("*.log")
            for line in log.read_text().split("\n")[:-1]
            if line.startswith('{"event": "job.finished"')
        ]

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sum(1 for x in lines() if x["id"] in quiet_ids) < len(quiet_ids):
        time.sleep(0.2)
    up.stop()
    thread.join(60)
    done = lines()
    for line in done:
        line["quiet"] = line["id"] in quiet_ids
    return done


def _summary(lines: list[dict[str, Any]]) -> tuple[float, int]:
    quiet = [x for x in lines if x["quiet"]]
    last = max(x["finished_at"] for x in quiet)
    noisy_before = sum(1 for x in lines if not x["quiet"] and x["finished_at"] <= last)
    return percentile([x["wait_ms"] for x in quiet], 0.99), noisy_before


def run_demo(out: TextIO | None = None) -> int:
    import sys

    out = out or sys.stdout
    with EmbeddedRedis() as server, tempfile.TemporaryDirectory(prefix="fairway-demo-") as folder:
        print(f"fairway demo: started a private redis-server at {server.url}", file=out)
        print(
            f"  tenant 'noisy' enqueues {NOISY_JOBS} jobs of {JOB_S * 1000:.0f} ms; 0.5 s later {QUIET_TENANTS} "
            f"quiet tenants enqueue {QUIET_JOBS} each; 2 workers.",
            file=out,
            flush=True,
        )
        results = {}
        for fair, name in ((True, "tenant-fair"), (False, "one FIFO queue")):
            started = time.monotonic()
            results[name] = _run(server.url, fair, Path(folder) / name.replace(" ", "-"))
            print(f"  ran {name} in {time.monotonic() - started:.1f} s", file=out, flush=True)
    fair_lines, fifo_lines = results["tenant-fair"], results["one FIFO queue"]
    print(f"\n  {'quiet tenant':<14} {'worst wait, fair':>17} {'worst wait, FIFO':>17}", file=out)
    fifo_quiet = sorted((x for x in fifo_lines if x["quiet"]), key=lambda x: x["enqueued_at"])
    for index in range(QUIET_TENANTS):
        fair_waits = [x["wait_ms"] for x in fair_lines if x.get("tenant") == f"quiet-{index}"]
        fifo_waits = [x["wait_ms"] for x in fifo_quiet[index * QUIET_JOBS : (index + 1) * QUIET_JOBS]]
        if index < 5 or index == QUIET_TENANTS - 1:
            print(f"  quiet-{index:<8} {max(fair_waits):>14} ms {max(fifo_waits):>14} ms", file=out)
        elif index == 5:
            print(f"  {'...':<14}", file=out)
    fair_p99, fair_noisy = _summary(fair_lines)
    fifo_p99, _ = _summary(fifo_lines)
    print(
        f"\n  quiet tenants' p99 wait: {fair_p99:.0f} ms fair vs {fifo_p99:.0f} ms FIFO "
        f"({fifo_p99 / max(fair_p99, 1):.0f}x lower with fairness)",
        file=out,
    )
    print(
        f"  the noisy tenant had run {fair_noisy} of its {NOISY_JOBS} jobs when the last quiet job finished: "
        "it only slowed itself.",
        file=out,
    )
    return 0
