"""A tenant's chunked import next to quiet tenants (docs/benchmarks.md, section 17): the import is one
batch in its tenant's own queue, so it is served round-robin with everyone else and its callback runs
when its last chunk ends.

    .venv/bin/python bench/batch_fairness.py [--rows 200000] [--chunk 500] [--chunk-ms 20] [--rounds 2]

Two scenarios in the same run, alternated: the quiet tenants alone (`--tenants` x `--each` jobs of
1 ms), and the same quiet tenants enqueued one second after one tenant's import of `--rows` rows in
chunks of `--chunk` (each chunk `--chunk-ms`), enqueued with `enqueue_chunked(..., on_complete=...)`.
Four worker processes serve the tenant group. Reports the quiet tenants' p99 wait in each, the
import's duration, and how long after its last chunk the callback started. bench/results/batch_fairness.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "worker"))

import redis  # noqa: E402

from fairway.queue.access.batches import Call  # noqa: E402
from fairway.queue.access.client import Client  # noqa: E402
from fairway.queue.access.figures import percentile  # noqa: E402
from support.redis_procs import RedisProcess  # noqa: E402

WORKERS = 4


def run(url: str, args: argparse.Namespace, with_import: bool, folder: Path) -> dict[str, Any]:
    redis.Redis.from_url(url).flushdb()
    logs = [folder / f"{with_import}-{i}.log" for i in range(WORKERS)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests"), "FAIRWAY_TEST_REDIS": url, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "fairway.cli", "worker", "--redis", url, "--tenants", "tenant-", "--handlers",
           "support.jobs", "--block-for", "1", "--log-format", "json", "--metrics-port", "0",
           "--health-port", "0"]  # fmt: skip
    outs = [log.open("w") for log in logs]
    procs = [subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT) for out in outs]
    time.sleep(1.5)
    client = Client(url)
    batch_id, chunk_ids = None, set()
    if with_import:
        rows = list(range(args.rows))
        ids = client.enqueue_chunked(
            "import_chunk", rows, chunk_size=args.chunk, tenant="importer", kwargs={"seconds": args.chunk_ms / 1000},
            on_complete=Call("noop"),
        )  # fmt: skip
        batch_id, chunk_ids = ids.batch_id, set(ids)  # type: ignore[attr-defined]
        time.sleep(1.0)
    quiet: set[str] = set()
    for t in range(args.tenants):
        quiet |= set(client.enqueue_many("sleep", [[0.001]] * args.each, tenant=f"q{t}"))

    def lines() -> list[dict[str, Any]]:
        texts = [log.read_text() for log in logs if log.exists()]
        return [json.loads(x) for text in texts for x in text.splitlines() if x.startswith("{")]

    deadline = time.monotonic() + 600
    while True:
        done = [x for x in lines() if x.get("event") == "job.finished"]
        quiet_done = sum(1 for x in done if x["id"] in quiet)
        status = client.batch_status(batch_id) if batch_id is not None else None
        batch_done = batch_id is None or (status is not None and status.done)
        callback = [x for x in done if x["handler"] == "noop"]
        if quiet_done == len(quiet) and (batch_id is None or (batch_done and callback)):
            break
        if time.monotonic() > deadline:
            raise RuntimeError("the run never finished")
        time.sleep(0.25)
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        proc.wait(30)
    waits = [x["wait_ms"] for x in done if x["id"] in quiet]
    p99s = [percentile([x["wait_ms"] for x in done if x.get("tenant") == f"q{t}"], 0.99) for t in range(args.tenants)]
    out: dict[str, Any] = {
        "quiet_p50_ms": round(percentile(waits, 0.5), 1),
        "quiet_p99_ms": round(percentile(waits, 0.99), 1),
        "worst_quiet_tenant_p99_ms": round(max(p99s), 1),
    }
    if batch_id is not None:
        chunks = [x for x in done if x["id"] in chunk_ids]
        status = client.batch_status(batch_id)
        assert status is not None and status.succeeded == len(chunk_ids) and len(callback) == 1, (status, len(callback))
        last_chunk = max(x["finished_at"] for x in chunks)
        quiet_last = max(x["finished_at"] for x in done if x["id"] in quiet)
        out.update(
            chunks=len(chunks),
            import_s=round((last_chunk - min(x["started_at"] for x in chunks)) / 1000, 2),
            callback_after_last_chunk_ms=round(callback[0]["started_at"] - last_chunk, 1),
            chunks_done_before_last_quiet=sum(1 for x in chunks if x["finished_at"] <= quiet_last),
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--chunk", type=int, default=500)
    parser.add_argument("--chunk-ms", type=float, default=20.0)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--each", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    server = RedisProcess().start()
    seen: dict[str, list[dict[str, Any]]] = {"quiet alone": [], "quiet next to the import": []}
    try:
        with tempfile.TemporaryDirectory() as folder:
            for _ in range(args.rounds):
                for name, with_import in (("quiet alone", False), ("quiet next to the import", True)):
                    seen[name].append(run(server.url, args, with_import, Path(folder)))
                    print(name, seen[name][-1], flush=True)
    finally:
        server.cleanup()
    report = {name: {key: statistics.median(r[key] for r in runs) for key in runs[0]} for name, runs in seen.items()}
    alone, mixed = report["quiet alone"]["quiet_p99_ms"], report["quiet next to the import"]["quiet_p99_ms"]
    report["quiet_p99_ratio"] = round(mixed / alone, 2)
    print(json.dumps(report, indent=2))
    (BENCH / "results" / "batch_fairness.json").write_text(json.dumps({"args": vars(args), **report}, indent=2) + "\n")


if __name__ == "__main__":
    main()
