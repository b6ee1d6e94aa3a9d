"""A bare BLMPOP loop over three keys: prints the wall-clock ms at which each pop returned (the baseline for
wake-up latency).  python -m bench.peers.blmpop_waiter REDIS_URL KEY [KEY...]   (add --cluster for a cluster)"""

from __future__ import annotations

import sys
import time

import redis
from redis.cluster import RedisCluster


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--cluster"]
    url, keys = args[0], args[1:]
    client = RedisCluster.from_url(url) if "--cluster" in sys.argv else redis.Redis.from_url(url)
    while True:
        if client.blmpop(5, len(keys), *keys, direction="LEFT", count=1):
            print(f"{time.time() * 1000:.3f}", flush=True)


if __name__ == "__main__":
    main()
