"""Redis "one network hop away", on loopback: tests/support/delaying_proxy.py in a process of its own,
so its CPU is not the benchmark driver's.

    python bench/proxy.py --listen 7001 --upstream 127.0.0.1:6379 --delay-ms 1

`tc netem` is not available on these machines. Both directions are delayed by --delay-ms, so a round
trip costs twice that more (bench/latency.py prints the measured round trip). It stops by itself
after --max-seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.delaying_proxy import DelayingProxy


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="host:port")
    parser.add_argument("--delay-ms", type=float, default=1.0, help="added to each direction")
    parser.add_argument("--max-seconds", type=float, default=3600)
    args = parser.parse_args()
    _, port = args.upstream.rsplit(":", 1)
    started = time.monotonic()
    DelayingProxy(int(port), args.delay_ms / 1000, args.listen).serve_for(args.max_seconds)
    print(f"proxy stopped after {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
