"""`fairway demo` (the README's run command): its own Redis, a noisy tenant, fair vs FIFO side by side."""

from __future__ import annotations

import re
import subprocess
import sys


def test_demo_shows_quiet_tenants_waiting_far_less_with_fairness() -> None:
    out = subprocess.run([sys.executable, "-m", "fairway.cli", "demo"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert re.search(r"started a private redis-server at redis://127\.0\.0\.1:\d+/0", out.stdout)
    assert ":6379/" not in out.stdout
    rows = re.findall(r"^\s+quiet-\d+\s+(\d+) ms\s+(\d+) ms$", out.stdout, re.M)
    assert len(rows) == 6
    assert all(int(fair) < int(fifo) for fair, fifo in rows)
    fair_p99, fifo_p99 = map(int, re.search(r"p99 wait: (\d+) ms fair vs (\d+) ms FIFO", out.stdout).groups())
    assert fifo_p99 > 5 * fair_p99
    noisy = int(re.search(r"had run (\d+) of its 3000 jobs", out.stdout).group(1))
    assert noisy < 0.25 * 3000
