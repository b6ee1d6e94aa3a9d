"""Write the simulator's benchmark traces (bench/traces/*.csv), deterministically (seeded).

    python bench/traces/make_traces.py [OUT_DIR]     # default: beside this file

- steady.csv: 3 queues at 5/3/1 jobs per second (Poisson) of 100 ms each, 600 s (0.9 busy slots in all).
- jitter.csv: near-idle: every second each queue gets 0-2 jobs of 300 ms, 600 s.
- burst.csv: 10,000 jobs of 200 ms at t = 10 s on one queue, then quiet.
- diurnal.csv: 24 simulated hours, a day curve from 5 to 195 jobs/s of 50-150 ms on 3 queues (~8.7 million jobs).
- noisy_tenant.csv: a tenant group; tenant `noisy` sends 5,000 jobs at once, 20 quiet tenants send a job a second.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

HERE = Path(__file__).parent


def poisson(rng: random.Random, mean: float) -> int:
    """Knuth's method for small means, a normal approximation for large ones."""
    if mean > 50:
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def write_all(out: Path) -> None:
    """Every trace into `out` (the test of the diurnal target writes them into a temporary folder)."""

    def write(name: str, header: str, rows: list[str]) -> None:
        (out / name).write_text(header + "\n" + "\n".join(rows) + "\n")

    rng = random.Random(26)
    rows = []
    for tenth in range(6000):  # 0.1 s buckets
        for queue, rate in (("high", 5), ("default", 3), ("low", 1)):
            n = poisson(rng, rate / 10)
            if n:
                rows.append(f"{tenth / 10:.1f},{queue},{n},100")
    write("steady.csv", "t_s,queue,jobs,run_ms", rows)

    rows = []
    for second in range(600):
        for queue in ("high", "default", "low"):
            n = rng.choice((0, 0, 1, 2))
            if n:
                rows.append(f"{second},{queue},{n},300")
    write("jitter.csv", "t_s,queue,jobs,run_ms", rows)

    write("burst.csv", "t_s,queue,jobs,run_ms", ["10,default,10000,200", "600,default,1,200"])

    rows = []
    for second in range(86_400):
        rate = 100 - 95 * math.cos(2 * math.pi * second / 86_400)  # night 5/s, afternoon 195/s
        for queue, share, run_ms in (("high", 0.5, 50), ("default", 0.3, 100), ("low", 0.2, 150)):
            n = poisson(rng, rate * share)
            if n:
                rows.append(f"{second},{queue},{n},{run_ms}")
    write("diurnal.csv", "t_s,queue,jobs,run_ms", rows)

    rows = ["0,tenant-,5000,200,noisy"]
    for second in range(1, 300):
        for quiet in range(20):
            rows.append(f"{second},tenant-,1,200,quiet-{quiet}")
    write("noisy_tenant.csv", "t_s,queue,jobs,run_ms,tenant", rows)


if __name__ == "__main__":
    write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
