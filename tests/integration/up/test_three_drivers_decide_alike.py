"""One demand series through the three drivers of the one autoscaler (the operator's scaling poll,
`fairway up`, `fairway simulate`'s fairway policy): the same decisions at the same moments.

Each driver runs its own code around the autoscaler: the operator reads Deployments (a pod starting
until the Deployment counts it ready) and patches them through its Kube; `fairway up` starts real
processes and counts one starting until its worker's heartbeat is in Redis; the simulator steps its
policy. The demand each reads from Redis is scripted (busy, waiting, oldest wait and runtimes per
served name, step by step) and a pod or process becomes ready two polls after it was asked for, so
`starting` and the runtimes' refresh are exercised too. Only the Redis figures and the clock are
scripted; everything else is the drivers' own.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, cast

from fairway.local.up import Up
from fairway.plan.autoscaler import POLL_S, RUNTIMES_EVERY_S, Autoscalers
from fairway.plan.load import pool_samples
from fairway.queue.access.figures import QueueStats
from fairway.queue.connection import RedisClient, connect
from fairway.queue.protocol.job import now_ms
from fairway.queue.protocol.keys import GlobalKeys
from fairway.resource.manifests import validate_spec
from fairway.resource.spec import QueueSupervisorSpec
from fairway.simulate.policies import FairwayPolicy
from fairway_operator import handlers
from fairway_operator.desired import POOL_KEY
from fairway_operator.kube import Kube
from fairway_operator.scaling import ScaledLog, Scaler, Supervised

READY_AFTER = 2  # polls between asking for a pod (or process) and its being ready
STEPS = 80


def spec_for(url: str) -> QueueSupervisorSpec:
    report = validate_spec(
        {
            "redis": {"url": url},
            "queues": ["high", "low"],
            "balance": "auto",
            "minProcesses": 0,
            "maxProcesses": 6,
            "balanceMaxShift": 2,
            "balanceCooldown": 3,
            "scaleDownDelay": 12,
            "concurrency": 2,
            "targetWait": 4,
            "worker": {"handlers": ["support.jobs"]},
        },
        "alike",
    )
    assert report.spec is not None, report.errors
    return report.spec


def demand_at(step: int) -> dict[str, QueueStats]:
    """A burst on `high` (short jobs), a slow build-up on `low` (long ones), then quiet."""
    high_ready = 14 if 5 <= step < 12 else (3 if 30 <= step < 34 else 0)
    high_busy = min(4, 2 + step // 6) if 5 <= step < 40 else 0
    low_ready = 2 + step // 8 if 8 <= step < 45 else 0
    low_busy = 2 if 10 <= step < 50 else 0

    def row(name: str, ready: int, busy: int, oldest: float | None) -> QueueStats:
        return QueueStats(name, ready, busy, 0, 0, False, oldest if ready else None, 0)

    return {
        "high": row("high", high_ready, high_busy, 1.0 + (step - 5) * 0.8),
        "low": row("low", low_ready, low_busy, 2.0 + (step - 8) * 0.5),
    }


def runtimes_at(step: int) -> dict[str, float | None]:
    return {"high": 150.0 if step < 40 else 90.0, "low": 2500.0 if step >= 8 else None}


class ScriptedDemand:
    """What a DemandReader would read at the current step."""

    def __init__(self) -> None:
        self.step = 0
        self.runtime_reads: list[int] = []

    def read(self, names: Iterable[str]) -> dict[str, QueueStats]:
        rows = demand_at(self.step)
        return {n: rows[n] for n in names if n in rows}

    def runtimes(self, names: Sequence[str]) -> dict[str, float | None]:
        self.runtime_reads.append(self.step)
        rows = runtimes_at(self.step)
        return {n: rows.get(n) for n in names}


class Readiness:
    """Pods (or processes) asked for at a step are ready READY_AFTER steps later; a shrink removes
    the newest first, as the ReplicaSet and `fairway up` do."""

    def __init__(self) -> None:
        self.ready_at: dict[str, list[int]] = {}

    def resize(self, pool: str, replicas: int, step: int) -> None:
        pods = self.ready_at.setdefault(pool, [])
        pods.extend([step + READY_AFTER] * max(0, replicas - len(pods)))
        del pods[replicas:]

    def ready(self, pool: str, step: int) -> int:
        return sum(1 for at in self.ready_at.get(pool, []) if at <= step)


class FakeKube:
    """The operator's Kube as the scaling poll uses it: Deployments patched in place."""

    def __init__(self, deployments: list[dict[str, Any]]) -> None:
        self.deployments = {d["metadata"]["name"]: d for d in deployments}

    def scale(self, namespace: str, name: str, replicas: int) -> None:
        self.deployments[name]["spec"]["replicas"] = replicas

    def event(self, body: Any, reason: str, message: str) -> None: ...

    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return []

    def annotate_pod(self, namespace: str, name: str, key: str, value: str) -> None: ...


class OneRedis:
    def __init__(self, client: RedisClient) -> None:
        self.client = client

    def redis_client(self, namespace: str, spec: QueueSupervisorSpec) -> RedisClient:
        return self.client


def run_operator(spec: QueueSupervisorSpec, url: str) -> list[list[str]]:
    pools = ["high", "low"]
    deployments = [
        {
            "metadata": {"name": f"alike-{p}", "annotations": {POOL_KEY: p}},
            "spec": {"replicas": 0},
            "status": {},
        }
        for p in pools
    ]
    kube, demand, readiness = FakeKube(deployments), ScriptedDemand(), Readiness()
    clock = [0.0]
    scaler = Scaler(
        cast(Kube, kube),
        Autoscalers(),
        OneRedis(connect(url, False)),
        ScaledLog(),
        clock=lambda: clock[0],
        demand_of=lambda _client: demand,
    )
    body = {"metadata": {"name": "alike", "namespace": "default", "uid": "u1"}, "spec": {}}
    out: list[list[str]] = []
    for step in range(STEPS):
        demand.step, clock[0] = step, step * POLL_S
        for d in deployments:
            d["status"] = {"readyReplicas": readiness.ready(d["metadata"]["annotations"][POOL_KEY], step)}
        made = scaler.poll([Supervised(body, spec, deployments)])
        out.append([c.message for _, c in made])
        for d in deployments:
            readiness.resize(d["metadata"]["annotations"][POOL_KEY], d["spec"]["replicas"], step)
    assert demand.runtime_reads == [s for s in range(STEPS) if s % RUNTIMES_EVERY_S == 0]
    return out


def run_up(spec: QueueSupervisorSpec, url: str) -> list[list[str]]:
    said = io.StringIO()
    clock = [0.0]
    up = Up([("alike", spec)], url, out=said, clock=lambda: clock[0])
    up.worker_command = ["sh", "-c", "sleep 600", "worker"]  # a process that stays up; its heartbeat is ours
    demand, readiness = ScriptedDemand(), Readiness()
    (sup,) = up.supervisors
    sup.demand = demand
    client = connect(url, False)
    asked_at: dict[int, int] = {}
    out: list[list[str]] = []
    try:
        for step in range(STEPS):
            demand.step, clock[0] = step, step * POLL_S
            for pool in sup.pools:  # each process "starts" its worker READY_AFTER polls after it was spawned
                for process in pool.processes:
                    asked_at.setdefault(process.proc.pid, step - 1)
                    if asked_at[process.proc.pid] + READY_AFTER <= step:
                        beat = {"served": [], "concurrency": 2, "busy": 0, "at": now_ms()}
                        client.hset(GlobalKeys().workers, process.worker_name, json.dumps(beat))
            before = said.tell()
            up._balance()
            up._supervise()
            lines = said.getvalue()[before:].splitlines()
            out.append(
                [line.removeprefix("fairway up: alike: ") for line in lines if line.startswith("fairway up: alike")]
            )
            for pool in sup.pools:
                readiness.resize(pool.pool.name, pool.replicas, step)
    finally:
        for pool in (p for s in up.supervisors for p in s.pools):
            for process in pool.processes:
                process.proc.kill()
                process.proc.wait()
            pool.log.close()
    assert demand.runtime_reads == [s for s in range(STEPS) if s % RUNTIMES_EVERY_S == 0]
    return out


def run_simulator(spec: QueueSupervisorSpec) -> list[list[str]]:
    policy = FairwayPolicy(spec, ["high", "low"], {})
    readiness = Readiness()
    out: list[list[str]] = []
    runtimes: dict[str, float | None] = {}
    for step in range(STEPS):
        if step % RUNTIMES_EVERY_S == 0:
            runtimes = runtimes_at(step)  # as the other drivers read them: every RUNTIMES_EVERY_S
        samples = pool_samples(spec, list(demand_at(step).values()), runtimes)
        samples = {
            pool: replace(sample, starting=policy.replicas[pool] - readiness.ready(pool, step))
            for pool, sample in samples.items()
        }
        before = len(policy.changes)
        policy.decide(step * POLL_S, samples)
        out.append([c.message for c in policy.changes[before:]])
        for pool, n in policy.replicas.items():
            readiness.resize(pool, n, step)
    return out


def test_the_operator_fairway_up_and_the_simulator_make_the_same_decisions(redis_url: str) -> None:
    spec = spec_for(redis_url)
    operator, up, simulator = run_operator(spec, redis_url), run_up(spec, redis_url), run_simulator(spec)
    changes = [m for step in operator for m in step]
    assert len(changes) >= 6, f"the series should make the autoscaler work: {changes}"
    assert any("-> 0 pods" in m for m in changes), "and scale down to zero at the end"
    assert operator == up, "fairway up decides as the operator does"
    assert operator == simulator, "the simulator decides as the operator does"


def test_every_driver_steps_at_the_same_cadence(redis_url: str) -> None:
    spec = spec_for(redis_url)
    assert handlers.LOOP_TICK_S == POLL_S
    assert FairwayPolicy(spec, ["high", "low"], {}).poll_s == POLL_S
    up = Up([("alike", spec)], redis_url, quiet=True)
    try:
        assert up.tick_s == POLL_S
    finally:
        for pool in (p for s in up.supervisors for p in s.pools):
            pool.log.close()
    assert math.isclose(RUNTIMES_EVERY_S % POLL_S, 0.0)
