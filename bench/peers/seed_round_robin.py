"""The seed article's TenantFairWorker, in Python, for comparison: round-robin over tenant queues found by a
key scan (`KEYS queues:tenant-*` filtered by LLEN > 0) cached for 250 ms, a cap of 5 in a row, plain LPOP.

    python -m bench.peers.seed_round_robin REDIS_URL LOG_FILE
Writes one JSON line per job (id, tenant, wait_ms, finished_at) to LOG_FILE; stops on SIGTERM.
"""

from __future__ import annotations

import json
import signal
import sys
import time

import redis

CACHE_S, CAP = 0.25, 5


def main() -> None:
    r = redis.Redis.from_url(sys.argv[1])
    log = open(sys.argv[2], "a", buffering=1)  # noqa: SIM115
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    rotation: list[bytes] = []
    cached_at = 0.0
    last, consecutive = b"", 0
    while not stopping:
        if time.monotonic() - cached_at > CACHE_S:
            active = [k for k in r.keys("queues:tenant-*") if r.llen(k) > 0]
            rotation = [k for k in rotation if k in active] + [k for k in active if k not in rotation]
            cached_at = time.monotonic()
        if not rotation:
            time.sleep(0.01)
            continue
        queue = rotation[0]
        consecutive = consecutive + 1 if queue == last else 1
        last = queue
        if consecutive >= CAP:  # force a rotation after CAP jobs from one tenant
            rotation.append(rotation.pop(0))
            consecutive = 0
        payload = r.lpop(queue)
        if payload is None:
            rotation.remove(queue)
            continue
        job = json.loads(payload)
        started = time.time() * 1000
        time.sleep(job["args"][0])
        log.write(
            json.dumps(
                {
                    "id": job["id"],
                    "tenant": job.get("tenant"),
                    "wait_ms": started - job["enqueued_at"],
                    "finished_at": time.time() * 1000,
                }
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
