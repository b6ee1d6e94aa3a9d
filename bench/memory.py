"""Worker memory: resident size of a worker at concurrency 1 and at 50, idle and after 100,000 jobs
each (no growth beyond a small bound; 50 slots cost at most 20 MiB more than one).

.venv/bin/python bench/memory.py [--jobs 100000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "tests"))

from fairway.queue.access.client import Client  # noqa: E402
from fairway.queue.access.inspector import Inspector  # noqa: E402
from support.redis_procs import RedisProcess  # noqa: E402

QUEUES = ("high", "default", "low")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def measure(url: str, concurrency: int, jobs: int) -> dict[str, object]:
    """Idle RSS, then RSS after each quarter of `jobs` no-op jobs drained by one worker process."""
    cmd = [sys.executable, "-m", "fairway.cli", "worker", "--redis", url, "--queues", ",".join(QUEUES)]
    cmd += ["--weight", "high=3", "--log-format", "none", "--block-for", "1", "--concurrency", str(concurrency)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2.0)
        idle = rss_mib(proc.pid)
        client = Client(url)
        marks = []
        per_queue = jobs // 4 // len(QUEUES)
        for _ in range(4):
            for queue in QUEUES:
                client.enqueue_many("noop", [[]] * per_queue, queue=queue)
            while sum(s.ready + s.reserved for s in Inspector(client.redis).stats(list(QUEUES))) > 0:
                time.sleep(0.2)
            time.sleep(1.2)  # a housekeeping tick: runtimes flushed, buffers settled
            marks.append(rss_mib(proc.pid))
    finally:
        proc.terminate()
        proc.wait(10)
    done = per_queue * len(QUEUES) * 4
    print(
        f"concurrency {concurrency}: idle {idle:.1f} MiB; after each quarter of {done} jobs: "
        + ", ".join(f"{m:.1f}" for m in marks)
        + f" MiB; growth over the run {marks[-1] - marks[0]:+.2f} MiB"
    )
    return {"jobs": done, "idle_mib": round(idle, 2), "after_each_quarter_mib": [round(m, 2) for m in marks]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=100_000)
    args = parser.parse_args()
    server = RedisProcess().start()
    try:
        results = {f"concurrency_{n}": measure(server.url, n, args.jobs) for n in (1, 50)}
    finally:
        server.cleanup()
    one, fifty = results["concurrency_1"], results["concurrency_50"]
    extra = fifty["after_each_quarter_mib"][-1] - one["after_each_quarter_mib"][-1]  # type: ignore[index]
    print(f"concurrency 50 costs {extra:+.1f} MiB over concurrency 1 after {one['jobs']} jobs each")
    (BENCH / "results" / "memory.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
