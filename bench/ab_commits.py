"""Tell a hot-path regression from this machine's noise: two checkouts' workers, back to back.

    git worktree add /tmp/before <commit>
    .venv/bin/python bench/ab_commits.py /tmp/before .

For each checkout in turn (in a fresh process, so each imports its own code), on a fresh Redis:
three rounds of one worker draining 20,000 no-op jobs (bench/throughput.py's `fairway_rate`), then
the Lua pop+reserve loop, then `INFO commandstats` for the server time per script call.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import sys
root = sys.argv[1]
for sub in ("worker", "bench", "tests", ""):
    sys.path.insert(0, f"{root}/{sub}".rstrip("/"))
import redis, throughput
from support.redis_procs import RedisProcess
server = RedisProcess().start()
try:
    r = redis.Redis.from_url(server.url)
    rates = []
    for _ in range(3):
        r.config_resetstat()
        rates.append(throughput.fairway_rate(server.url, 20000))
        evalsha = r.info("commandstats").get("cmdstat_evalsha", {})
    lua = throughput.baseline_lua(server.url, 20000)
    ratios = ", ".join(f"{rate / lua:.2f}" for rate in rates)
    print(f"{root}: fairway/(a) {ratios}; reserve script {evalsha.get('usec_per_call')} us per call")
finally:
    server.cleanup()
"""


def main() -> None:
    for root in sys.argv[1:]:
        subprocess.run([sys.executable, "-c", PROBE, str(Path(root).resolve())], check=True)


if __name__ == "__main__":
    main()
