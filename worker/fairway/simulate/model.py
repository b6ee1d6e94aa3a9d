"""The simulated cluster `fairway simulate` replays a trace on (pure: no clock, no I/O).

It aggregates by time step, not by job: each queue (each tenant, in a tenant group) holds cohorts of
jobs that arrived together, and each step a pool's free slots are shared fairly among its waiting
lanes (round-robin across queues and tenants, as the weighted draw and the tenant ring do on
average). A job shorter than a step uses that fraction of a slot's step; a longer one holds a slot
until it ends. Pods take `pod_start_s` to become ready; a pod that is removed stops taking jobs at
once, and its running jobs finish (the worker drains on SIGTERM). So a 24-hour trace of millions of
jobs replays in seconds, with waits known to a step.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from fairway.plan.scaling import PoolSample
from fairway.simulate.trace import Arrival

STEP_S = 0.25  # the simulated clock's step
RUNTIME_MEMORY = 0.05  # how fast a pool's average runtime follows new jobs (per job batch)


@dataclass
class Lane:
    """One queue, or one tenant of the tenant group: FIFO cohorts [arrived at, jobs, run ms]."""

    key: str  # where its waits are counted: the queue (a tenant's lane: the group's queue prefix)
    cohorts: deque[list[float]] = field(default_factory=deque)
    jobs: int = 0


@dataclass
class SimPool:
    name: str
    concurrency: int
    lanes: dict[str, Lane] = field(default_factory=dict)
    pods: list[float] = field(default_factory=list)  # each pod's ready time
    running: list[tuple[float, int]] = field(default_factory=list)  # heap of (ends at, jobs) holding slots
    busy: int = 0  # slots held by jobs longer than a step
    step_use: float = 0.0  # slots' worth of short jobs this step
    runtime_ms: float | None = None
    turn: int = 0  # which lane goes first when the slots left are fewer than the lanes waiting

    @property
    def waiting(self) -> int:
        return sum(lane.jobs for lane in self.lanes.values())

    def ready_pods(self, t: float) -> int:
        return sum(1 for ready_at in self.pods if ready_at <= t + 1e-9)

    def oldest_s(self, t: float) -> float | None:
        heads = [lane.cohorts[0][0] for lane in self.lanes.values() if lane.cohorts]
        return max(0.0, t - min(heads)) if heads else None

    def sample(self, t: float) -> PoolSample:
        """What a look at Redis at this moment sees: slots busy, jobs waiting, the oldest one's wait."""
        starting = len(self.pods) - self.ready_pods(t)
        return PoolSample(self.busy + self.step_use, self.waiting, self.oldest_s(t), self.runtime_ms, starting)

    def resize(self, t: float, replicas: int, pod_start_s: float) -> None:
        if replicas > len(self.pods):
            self.pods += [t + pod_start_s] * (replicas - len(self.pods))
        elif replicas < len(self.pods):
            self.pods.sort()  # starting pods (the latest ready times) go first, then ready ones
            del self.pods[replicas:]


@dataclass
class Totals:
    pod_seconds: float = 0.0
    busy_slot_seconds: float = 0.0
    jobs_done: int = 0
    waits_ms: dict[str, Counter[int]] = field(default_factory=dict)  # queue -> wait (ms) -> jobs


class Cluster:
    def __init__(self, pools: Sequence[SimPool], lane_of: Callable[[Arrival], tuple[str, str, str]]) -> None:
        """`lane_of(arrival)`: (pool name, lane id, wait key) for an arrival."""
        self.pools = {p.name: p for p in pools}
        self.lane_of = lane_of
        self.totals = Totals()

    def arrive(self, arrival: Arrival) -> None:
        if arrival.jobs == 0:
            return
        pool_name, lane_id, key = self.lane_of(arrival)
        pool = self.pools[pool_name]
        lane = pool.lanes.get(lane_id)
        if lane is None:
            lane = pool.lanes[lane_id] = Lane(key)
        lane.cohorts.append([arrival.t_s, float(arrival.jobs), arrival.run_ms])
        lane.jobs += arrival.jobs

    def idle(self) -> bool:
        return all(not p.waiting and not p.running for p in self.pools.values())

    def step(self, t: float, dt: float) -> None:
        totals = self.totals
        for pool in self.pools.values():
            while pool.running and pool.running[0][0] <= t + 1e-9:
                pool.busy -= heapq.heappop(pool.running)[1]
            pool.step_use = 0.0
            free = pool.ready_pods(t) * pool.concurrency - pool.busy
            if free > 0 and pool.lanes:
                self._serve(pool, t, dt, float(free))
            totals.pod_seconds += len(pool.pods) * dt
            totals.busy_slot_seconds += (pool.busy + pool.step_use) * dt

    def _serve(self, pool: SimPool, t: float, dt: float, free: float) -> None:
        """Share `free` slots among the waiting lanes evenly; what a lane cannot use goes round again
        to the others (round-robin across queues and tenants, as the tenant ring does)."""
        while free > 1e-9:
            active = [lane for lane in pool.lanes.values() if lane.jobs]
            if not active:
                break
            share = free / len(active)
            used = 0.0
            for lane in active:
                used += share - self._take(pool, lane, t, dt, share)
            free -= used
            if used <= 1e-9:
                # Each lane's share is less than a job: one lane after another takes what is left,
                # starting one further round each step, as the ring's turns do.
                pool.turn = (pool.turn + 1) % len(active)
                for lane in active[pool.turn :] + active[: pool.turn]:
                    free = self._take(pool, lane, t, dt, free)
                break
        for lane_id in [k for k, lane in pool.lanes.items() if not lane.jobs]:
            del pool.lanes[lane_id]

    def _take(self, pool: SimPool, lane: Lane, t: float, dt: float, capacity: float) -> float:
        """Start jobs from the lane's head within `capacity` slots; what is left of it."""
        waits = self.totals.waits_ms.setdefault(lane.key, Counter())
        while lane.cohorts and capacity > 1e-9:
            cohort = lane.cohorts[0]
            arrived, count, run_ms = cohort
            run_s = run_ms / 1000
            cost = min(run_s, dt) / dt
            n = min(int(count), int(capacity / cost + 1e-9))
            if n <= 0:
                break
            capacity -= n * cost
            waits[round(max(0.0, t - arrived) * 1000)] += n
            if run_s >= dt:
                heapq.heappush(pool.running, (t + run_s, n))
                pool.busy += n
            else:
                pool.step_use += n * cost
            known = pool.runtime_ms
            pool.runtime_ms = run_ms if known is None else known + RUNTIME_MEMORY * (run_ms - known)
            self.totals.jobs_done += n
            lane.jobs -= n
            if n == count:
                lane.cohorts.popleft()
            else:
                cohort[1] = count - n
        return capacity


def percentile_ms(waits: Counter[int], q: float) -> float:
    total = sum(waits.values())
    if not total:
        return 0.0
    rank, seen = q * total, 0
    for wait in sorted(waits):
        seen += waits[wait]
        if seen >= rank - 1e-9:
            return float(wait)
    return float(max(waits))
