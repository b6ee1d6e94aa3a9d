"""`fairway demo` (the README's run command) starts its own Redis and shows strict vs weighted service."""

from __future__ import annotations

import re
import subprocess
import sys


def test_demo_runs_on_its_own_redis_and_shows_proportional_service() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "fairway.cli", "demo", "--jobs", "900"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert re.search(r"started a private redis-server at redis://127\.0\.0\.1:\d+/0", out.stdout)
    assert ":6379/" not in out.stdout
    strict, weighted = out.stdout.split("weighted 3:2:1")
    assert re.search(r"high\s+-\s+900\s+100%", strict)
    served = {m[0]: int(m[1]) for m in re.findall(r"^\s+(high|default|low)\s+\d\s+(\d+)", weighted, re.M)}
    assert sum(served.values()) == 900
    assert served["high"] > served["default"] > served["low"] > 0
