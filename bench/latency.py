"""Redis a network hop away, and on loopback: one worker process draining a full queue, Fairway at
concurrency N against the peers at the same N, in one run.

    bench/setup.sh && .venv-bench/bin/python bench/latency.py [--delay-ms 0.85] [--rounds 3] [--full]

The hop: bench/proxy.py delays both directions (by --delay-ms each; the measured round trip is
printed and kept). Workloads: no-op jobs, and jobs that wait 20 ms (`time.sleep` on threads,
`asyncio.sleep` for arq). Every subject is one worker process started on a full queue (filled directly,
not through the proxy); its CPU time is the process tree's user + system time from /proc.

Two timings of the same drain, which must agree (both are printed and kept):
  - first-to-empty: from the first job taken to an empty queue (start-up is not counted);
  - slope: the rate between 10 % and 90 % of the queue drained, from the samples of what is left (no
    start-up, no first batch, no tail).
For 20 ms jobs: the idle time per slot, and, for Fairway, how long its handlers really ran (from the
worker's /metrics), which gives the best rate any worker could reach without prefetch,
N / (run time + round trip).
Rounds alternate the subjects' order (forward, backward, ...); each figure is the median of rounds.
The default plan is the one the targets need (docs/benchmarks.md section 8); --full adds Fairway at 8,
Celery, arq and RQ. Results go to bench/results/latency.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from support.redis_procs import RedisProcess, free_port  # noqa: E402
from support.scrape import scrape, value  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
SLEEP_S = 0.02


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its live descendants."""
    total, stack = 0.0, [pid]
    while stack:
        current = stack.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / CLK_TCK
            for task in Path(f"/proc/{current}/task").iterdir():
                stack.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return total


@dataclass(frozen=True)
class Drained:
    first_to_empty: float  # jobs/s
    slope: float  # jobs/s between 10 % and 90 % drained
    cpu_ms_per_job: float
    rtt_ms: float  # median round trip to Redis through the same path while the subject drained
    run_ms: float | None = None  # mean time a handler ran, as the worker measured it (Fairway only)


class RttSampler:
    """PINGs `url` every 20 ms on its own connection while a subject drains: the round trip its calls
    actually met (a loaded proxy is slower than an idle one)."""

    def __init__(self, url: str) -> None:
        self.r = redis.Redis.from_url(url)
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            t = time.perf_counter()
            self.r.ping()
            self.samples.append((time.perf_counter() - t) * 1000)

    def __enter__(self) -> RttSampler:
        self.r.ping()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def median_ms(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")


def slope_rate(samples: list[tuple[float, int]], jobs: int) -> float:
    """Jobs/s between the first sample at or below 90 % of the jobs left and the first at or below 10 %."""
    upper = next(s for s in samples if s[1] <= 0.9 * jobs)
    lower = next(s for s in samples if s[1] <= 0.1 * jobs)
    return (upper[1] - lower[1]) / max(1e-9, lower[0] - upper[0])


def drain(
    cmd: list[str],
    env: dict[str, str],
    jobs: int,
    remaining: Callable[[], int],
    run_ms: Callable[[], float] | None = None,
) -> Drained:
    """One worker process draining a full queue, timed both ways; `run_ms`, if given, reads the mean
    run time of its jobs from the worker once the queue is empty."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        with RttSampler(env["BENCH_REDIS_URL"]) as rtt:
            drained = _timed(proc, cmd, jobs, remaining, rtt)
        return drained if run_ms is None else dataclasses.replace(drained, run_ms=run_ms())
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _timed(
    proc: subprocess.Popen[bytes], cmd: list[str], jobs: int, remaining: Callable[[], int], rtt: RttSampler
) -> Drained:
    """From the first job taken to an empty queue, sampling what is left every 2 ms."""
    deadline = time.monotonic() + 600
    while (left := remaining()) >= jobs:
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError(f"{cmd[:4]} never took a job")
        time.sleep(0.001)
    cpu_before, started = tree_cpu_s(proc.pid), time.perf_counter()
    samples = [(started, left)]
    while left > 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{cmd[:4]} did not drain the queue")
        time.sleep(0.002)
        left = remaining()
        samples.append((time.perf_counter(), left))
    elapsed = samples[-1][0] - started
    cpu = tree_cpu_s(proc.pid) - cpu_before
    return Drained(jobs / elapsed, slope_rate(samples, jobs), cpu / jobs * 1000, rtt.median_ms())


def mean_run_ms(port: int, queue: str) -> float:
    """The mean of `fairway_job_run_seconds` for `queue`, from a worker's /metrics: how long its jobs
    really ran (a 20 ms `time.sleep` oversleeps on a loaded machine), which no worker can shorten."""
    samples = scrape(port)
    count = value(samples, "fairway_job_run_seconds_count", queue=queue)
    return value(samples, "fairway_job_run_seconds_sum", queue=queue) / count * 1000


class Subjects:
    """Each fills the queue directly, then drains it through `url` (the proxy, or Redis itself)."""

    def __init__(self, direct: str) -> None:
        self.direct = direct
        self.r = redis.Redis.from_url(direct)

    def env(self, url: str) -> dict[str, str]:
        # (a PYTHONPATH given to this run goes first: bench/before_after.py runs another checkout's worker)
        paths = [p for p in (os.environ.get("PYTHONPATH"), str(ROOT)) if p]
        return {**os.environ, "BENCH_REDIS_URL": url, "PYTHONPATH": os.pathsep.join(paths)}

    def fairway(self, url: str, n: int, jobs: int, sleep: bool) -> Drained:
        from fairway.queue.access.client import Client

        self.r.flushdb()
        Client(self.direct).enqueue_many("sleep" if sleep else "noop", [[SLEEP_S] if sleep else []] * jobs, queue="q")
        port = free_port()
        cmd = [sys.executable, "-m", "fairway.cli", "worker", "--redis", url, "--queues", "q"]
        cmd += ["--concurrency", str(n), "--log-format", "none", "--block-for", "1", "--metrics-port", str(port)]
        return drain(
            cmd,
            self.env(url),
            jobs,
            lambda: int(self.r.llen("fairway:{q}:ready")) + int(self.r.zcard("fairway:{q}:reserved")),
            (lambda: mean_run_ms(port, "q")) if sleep else None,
        )

    def dramatiq(self, url: str, n: int, jobs: int, sleep: bool) -> Drained:
        import dramatiq
        from dramatiq.brokers.redis import RedisBroker

        self.r.flushdb()
        dramatiq.set_broker(RedisBroker(url=self.direct))
        from bench.peers import tasks

        actor = tasks.dramatiq_sleep if sleep else tasks.dramatiq_noop
        with self.r.pipeline(transaction=False):
            for _ in range(jobs):
                actor.send()
        cmd = [sys.executable, "-m", "dramatiq", "bench.peers.tasks", "--processes", "1", "--threads", str(n)]
        return drain(cmd, self.env(url), jobs, lambda: int(self.r.hlen("dramatiq:default.msgs")))

    def celery(self, url: str, n: int, jobs: int, sleep: bool) -> Drained:
        from bench.peers.tasks import celery_app

        self.r.flushdb()
        celery_app.conf.broker_url = self.direct
        with celery_app.connection_for_write() as conn, conn.Producer() as producer:
            for _ in range(jobs):
                celery_app.send_task("sleep" if sleep else "noop", producer=producer)
        cmd = [sys.executable, "-m", "celery", "-A", "bench.peers.tasks:celery_app", "worker", "--pool=threads"]
        cmd += [f"--concurrency={n}", "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=ERROR"]
        return drain(cmd, self.env(url), jobs, lambda: int(self.r.llen("celery")) + int(self.r.hlen("unacked")))

    def arq(self, url: str, n: int, jobs: int, sleep: bool) -> Drained:
        import asyncio

        from arq import create_pool
        from arq.connections import RedisSettings

        self.r.flushdb()

        async def fill() -> None:
            pool = await create_pool(RedisSettings.from_dsn(self.direct))
            for _ in range(jobs):
                await pool.enqueue_job("arq_sleep" if sleep else "arq_noop")
            await pool.aclose()

        asyncio.run(fill())
        cmd = [sys.executable, "-m", "arq", "bench.peers.tasks.ArqSettings"]

        def remaining() -> int:
            return int(self.r.zcard("arq:queue")) + len(self.r.keys("arq:in-progress:*"))

        return drain(cmd, {**self.env(url), "ARQ_MAX_JOBS": str(n)}, jobs, remaining)

    def rq(self, url: str, n: int, jobs: int, sleep: bool) -> Drained:
        from bench.peers.tasks import rq_noop, rq_sleep
        from rq import Queue
        from rq.registry import StartedJobRegistry

        self.r.flushdb()
        queue = Queue("default", connection=self.r)
        func = rq_sleep if sleep else rq_noop
        for start in range(0, jobs, 1000):
            queue.enqueue_many([Queue.prepare_data(func) for _ in range(min(1000, jobs - start))])
        started = StartedJobRegistry(queue=queue)
        cmd = [sys.executable, "-m", "rq.cli", "worker", "--burst", "-w", "rq.SimpleWorker", "--url", url]
        cmd += ["--logging_level", "ERROR", "default"]
        return drain(cmd, self.env(url), jobs, lambda: queue.count + started.count)


@dataclass(frozen=True)
class Case:
    where: str  # "hop" or "loopback"
    workload: str  # "noop" or "sleep20ms"
    name: str
    n: int

    @property
    def key(self) -> str:
        return f"{self.where}/{self.workload}/{self.name}/{self.n}"


def plan(full: bool) -> list[Case]:
    cases = [
        Case("hop", "noop", "fairway", 1),
        Case("hop", "noop", "fairway", 32),
        Case("hop", "noop", "dramatiq", 32),
        Case("hop", "sleep20ms", "fairway", 32),
        Case("hop", "sleep20ms", "dramatiq", 32),
        Case("loopback", "noop", "fairway", 32),
        Case("loopback", "noop", "dramatiq", 32),
        Case("loopback", "sleep20ms", "fairway", 50),
        Case("loopback", "sleep20ms", "dramatiq", 50),
    ]
    if full:
        cases += [Case("hop", w, "fairway", 8) for w in ("noop", "sleep20ms")]
        cases += [Case("hop", w, "dramatiq", 8) for w in ("noop", "sleep20ms")]
        cases += [Case("hop", w, peer, n) for w in ("noop", "sleep20ms") for peer in ("celery", "arq") for n in (8, 32)]
        cases += [Case("hop", w, "rq", 1) for w in ("noop", "sleep20ms")]
    return cases


def jobs_for(case: Case, args: argparse.Namespace) -> int:
    if case.n == 1 or case.name in ("arq", "rq", "celery"):
        return int(args.slow_jobs)
    return int(args.sleep_jobs if case.workload == "sleep20ms" else args.jobs)


def measured_rtt_ms(url: str) -> float:
    r = redis.Redis.from_url(url)
    r.ping()
    samples = []
    for _ in range(100):
        t = time.perf_counter()
        r.ping()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def start_proxy(upstream_port: int, delay_ms: float) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, str(BENCH / "proxy.py"), "--listen", str(port), "--upstream", f"127.0.0.1:{upstream_port}"]
    proxy = subprocess.Popen([*cmd, "--delay-ms", str(delay_ms)], stdout=subprocess.DEVNULL)
    for _ in range(100):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    return proxy, f"redis://127.0.0.1:{port}/0"


def summary(case: Case, rounds: list[Drained], jobs: int) -> dict[str, Any]:
    first = [r.first_to_empty for r in rounds]
    slope = [r.slope for r in rounds]
    rtt = statistics.median(r.rtt_ms for r in rounds)
    extra: dict[str, Any] = {"rtt_ms_while_draining": round(rtt, 3)}
    if case.workload == "sleep20ms":
        # A slot is idle from its job's end to its next job's start: at least one round trip, since a
        # call may ask only for slots already free (no prefetch). The best rate is N / (20 ms + RTT).
        rate = statistics.median(first)
        extra["idle_ms_per_job"] = round(case.n / rate * 1000 - SLEEP_S * 1000, 3)
        extra["of_ideal"] = round(rate / (case.n / SLEEP_S), 3)
        extra["of_best_without_prefetch"] = round(rate / (case.n / (SLEEP_S + rtt / 1000)), 3)
        runs = [r.run_ms for r in rounds if r.run_ms is not None]
        if runs:  # the same bound with the jobs' real length: N / (run time + RTT)
            run_ms = statistics.median(runs)
            extra["job_run_ms"] = round(run_ms, 3)
            extra["of_best_given_run_time"] = round(rate / (case.n / ((run_ms + rtt) / 1000)), 3)
    return {
        **extra,
        "jobs": jobs,
        "jobs_per_s": round(statistics.median(first)),
        "jobs_per_s_rounds": [round(x) for x in first],
        "slope_jobs_per_s": round(statistics.median(slope)),
        "slope_rounds": [round(x) for x in slope],
        "cpu_ms_per_job": round(statistics.median(r.cpu_ms_per_job for r in rounds), 3),
    }


def ratios(results: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The targets' ratios, where both sides were measured."""

    def rate(key: str) -> float | None:
        return results[key]["jobs_per_s"] if key in results else None

    out: dict[str, float] = {}
    pairs = {
        "hop: fairway 32 / dramatiq 32, no-op": ("hop/noop/fairway/32", "hop/noop/dramatiq/32"),
        "hop: fairway 32 / dramatiq 32, 20 ms": ("hop/sleep20ms/fairway/32", "hop/sleep20ms/dramatiq/32"),
        "loopback: fairway 32 / dramatiq 32, no-op": ("loopback/noop/fairway/32", "loopback/noop/dramatiq/32"),
    }
    for label, (a, b) in pairs.items():
        if (ra := rate(a)) and (rb := rate(b)):
            out[label] = round(ra / rb, 2)
    for key in ("hop/sleep20ms/fairway/32", "loopback/sleep20ms/fairway/50"):
        if key in results:
            out[f"{key}: of the best without prefetch, N / (20 ms + RTT)"] = results[key]["of_best_without_prefetch"]
            if "of_best_given_run_time" in results[key]:
                label = f"{key}: of the best given the jobs' run time, N / (run time + RTT)"
                out[label] = results[key]["of_best_given_run_time"]
    ideals = {"hop: fairway 32, 20 ms, of ideal": ("hop/sleep20ms/fairway/32", 32)}
    ideals["loopback: fairway 50, 20 ms, of ideal"] = ("loopback/sleep20ms/fairway/50", 50)
    for label, (key, n) in ideals.items():
        if (r := rate(key)) is not None:
            out[label] = round(r / (n / SLEEP_S), 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay-ms", type=float, default=0.85, help="added to each direction by the proxy")
    parser.add_argument("--jobs", type=int, default=20_000, help="no-op jobs for fast subjects")
    parser.add_argument("--sleep-jobs", type=int, default=5_000, help="20 ms jobs at N >= 8")
    parser.add_argument("--slow-jobs", type=int, default=1_000, help="jobs at N = 1, and for arq, Celery and RQ")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="also Fairway at 8, Celery, arq and RQ")
    parser.add_argument("--only", nargs="*", default=None, help="subject names, e.g. fairway dramatiq")
    parser.add_argument("--where", nargs="*", default=None, help="hop and/or loopback")
    parser.add_argument("--out", default=str(BENCH / "results" / "latency.json"))
    args = parser.parse_args()
    server = RedisProcess().start()
    os.environ["BENCH_REDIS_URL"] = server.url  # peers' tasks bind their broker at import: fill directly
    proxy, proxied = start_proxy(server.port, args.delay_ms)
    urls = {"hop": proxied, "loopback": server.url}
    cases = [
        c
        for c in plan(args.full)
        if (not args.only or c.name in args.only) and (not args.where or c.where in args.where)
    ]
    subjects = Subjects(server.url)
    measured: dict[Case, list[Drained]] = {c: [] for c in cases}
    try:
        rtt = {"direct": measured_rtt_ms(server.url), "proxied": measured_rtt_ms(proxied)}
        print(f"round trip: direct {rtt['direct']:.3f} ms, through the proxy {rtt['proxied']:.3f} ms", flush=True)
        for round_no in range(args.rounds):
            for case in cases if round_no % 2 == 0 else cases[::-1]:
                run = getattr(subjects, case.name)
                d = run(urls[case.where], case.n, jobs_for(case, args), case.workload == "sleep20ms")
                measured[case].append(d)
                print(
                    f"round {round_no + 1} {case.key:<30} {d.first_to_empty:>8.0f} jobs/s (slope {d.slope:>8.0f})"
                    f"  {d.cpu_ms_per_job:6.3f} ms CPU/job",
                    flush=True,
                )
    finally:
        proxy.terminate()
        server.cleanup()
    results = {c.key: summary(c, measured[c], jobs_for(c, args)) for c in cases if measured[c]}
    print()
    for key, s in results.items():
        agree = s["slope_jobs_per_s"] / s["jobs_per_s"]
        idle = f"  idle {s['idle_ms_per_job']:.2f} ms/job" if "idle_ms_per_job" in s else ""
        idle += f"  run {s['job_run_ms']:.2f} ms/job" if "job_run_ms" in s else ""
        print(
            f"{key:<30} {s['jobs_per_s']:>8} jobs/s  slope {s['slope_jobs_per_s']:>8} ({agree:.2f})"
            f"  {s['cpu_ms_per_job']:6.3f} ms CPU/job  RTT {s['rtt_ms_while_draining']:.2f} ms{idle}"
            f"  rounds {s['jobs_per_s_rounds']}"
        )
    targets = ratios(results)
    for label, figure in targets.items():
        print(f"{label}: {figure}")
    report = {"delay_ms_each_way": args.delay_ms, "rtt_ms": rtt, "rounds": args.rounds, "results": results}
    report["ratios"] = targets
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
