"""Worker memory: resident size of an idle worker, and after 100,000 jobs (no growth beyond a small bound).

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

from fairway.queue.client import Client  # noqa: E402
from fairway.queue.inspector import Inspector  # noqa: E402
from support.redis_procs import RedisProcess  # noqa: E402


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=100_000)
    args = parser.parse_args()
    server = RedisProcess().start()
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fairway.cli",
                "worker",
                "--redis",
                server.url,
                "--queues",
                "high,default,low",
                "--weight",
                "high=3",
                "--log-format",
                "none",
                "--block-for",
                "1",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(2.0)
        idle = rss_mib(proc.pid)
        client = Client(server.url)
        marks = []
        per_round = args.jobs // 4
        for _ in range(4):
            for queue in ("high", "default", "low"):
                client.enqueue_many("noop", [[]] * (per_round // 3), queue=queue)
            while sum(s.ready + s.reserved for s in Inspector(client.redis).stats(["high", "default", "low"])) > 0:
                time.sleep(0.2)
            time.sleep(1.2)  # a housekeeping tick: runtimes flushed, buffers settled
            marks.append(rss_mib(proc.pid))
        proc.terminate()
        proc.wait(10)
    finally:
        server.cleanup()
    done = (per_round // 3) * 3 * 4
    print(f"idle worker RSS: {idle:.1f} MiB")
    for index, mark in enumerate(marks, start=1):
        print(f"after {index * (per_round // 3) * 3:>7} jobs: {mark:.1f} MiB")
    print(
        f"growth from the first quarter to the end ({done} jobs): {marks[-1] - marks[0]:+.2f} MiB; "
        f"from idle: {marks[-1] - idle:+.2f} MiB"
    )
    (BENCH / "results" / "memory.json").write_text(
        json.dumps(
            {"jobs": done, "idle_mib": round(idle, 2), "after_each_quarter_mib": [round(m, 2) for m in marks]}, indent=2
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
