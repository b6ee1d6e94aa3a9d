"""Sizing a supervisor's pools in job slots, stably (pure: samples and a clock in, changes out).

The operator, `fairway up` and `fairway simulate` run this one planner. A pool's demand is its busy
slots plus the jobs waiting for it; it needs ceil(demand / concurrency) pods, or one more than it has
while its oldest waiting job has waited longer than `targetWait`. With `targetWait` set, jobs may wait
that long, so a pool is sized for the work it receives (its busy slots averaged over `BUSY_WINDOW_S`,
not the instant of a look, which right after a burst sees every slot taken) or for clearing its
waiting jobs within targetWait, whichever asks more. Changes are stable by construction,
like the HPA's stabilization windows:
- up only to the *least* need seen over the last cooldown (demand that persisted for a cooldown, not a
  blip), by at most `balanceMaxShift` pods per cooldown;
- down only to the *most* need seen over the last `scaleDownDelay`, by at most `balanceMaxShift` per
  cooldown, never below `minProcesses`;
- nothing while the need sits inside the current size;
- a pool at zero wakes at its first waiting job, at once (no window: no job should wait a cooldown
  to get its first pod).
The supervisor's `maxProcesses` caps the total: when pools want more than is left, the pods left are
handed out one at a time to the pool with the fewest per unit of load (ready jobs, or ready jobs x
average runtime under the `time` strategy), so `auto`'s shares decide who grows.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from fairway.resource.balance import DEFAULT_STRATEGY, STRATEGIES, ScalingStrategy, StrategyRule
from fairway.resource.spec import QueueSupervisorSpec


@dataclass(frozen=True)
class PoolSample:
    """One look at a pool: what it runs and what waits for it."""

    busy: float  # busy slots (its reserved jobs); the simulator passes averages over its poll
    ready: float  # jobs waiting for it: ready, due delayed, and the tenant group's waiting jobs
    oldest_s: float | None = None  # how long its oldest ready job has waited
    runtime_ms: float | None = None  # recent average runtime (the `time` strategy's weight)
    starting: int = 0  # pods asked for that are not ready yet: the answer to a long wait, on its way


@dataclass(frozen=True)
class ScalingRules:
    """The spec's scaling fields, as the planner reads them (`from_spec`: the one place they map)."""

    min_processes: int = 1
    max_processes: int = 10
    max_shift: int = 1
    cooldown_s: float = 3.0
    scale_down_delay_s: float = 60.0
    concurrency: int = 1
    target_wait_s: float | None = None
    strategy: ScalingStrategy = DEFAULT_STRATEGY

    @property
    def strategy_rule(self) -> StrategyRule:
        return STRATEGIES[self.strategy]

    @classmethod
    def from_spec(cls, spec: QueueSupervisorSpec) -> ScalingRules:
        return cls(
            spec.min_processes,
            spec.max_processes,
            spec.balance_max_shift,
            float(spec.balance_cooldown),
            float(spec.scale_down_delay),
            spec.concurrency,
            None if spec.target_wait is None else float(spec.target_wait),
            spec.auto_scaling_strategy,
        )


@dataclass(frozen=True)
class Change:
    t_s: float
    pool: str
    before: int
    after: int
    reason: str  # "demand", "idle", "wake" or "targetWait"
    message: str  # what a person reads in the Event: "pool high: 2 -> 4 pods (130 ready, ...)"


@dataclass
class _Track:
    replicas: int
    kept_s: float  # samples older than this are dropped (the longer of the two windows)
    samples: deque[tuple[float, int, int]] = field(default_factory=deque)  # (t, pods to grow to, pods to keep)
    busy: deque[tuple[float, float]] = field(default_factory=deque)  # (t, busy slots): the targetWait average
    since: float | None = None  # first sample since the planner (or the pool) started
    changed_at: float | None = None
    last: PoolSample | None = None
    # The windows' least growth and most keep, as monotonic deques (t, pods): each step reads them in
    # O(1) instead of scanning a window of samples (one a second per pool: 300 with a 5-minute
    # scaleDownDelay, for every pool of every supervisor the operator polls).
    grow_low: deque[tuple[float, int]] = field(default_factory=deque)
    keep_high: deque[tuple[float, int]] = field(default_factory=deque)

    def add(self, t: float, grow: int, keep: int) -> None:
        went_back = bool(self.grow_low) and t < max(self.grow_low[-1][0], self.keep_high[-1][0])
        self.samples.append((t, grow, keep))
        while self.samples and self.samples[0][0] < t - self.kept_s:
            self.samples.popleft()
        if went_back:  # (a clock that went back: rebuilt from the samples, which stay the truth)
            self.grow_low.clear()
            self.keep_high.clear()
            for at, g, k in sorted(self.samples):
                self._push(at, g, k)
        else:
            self._push(t, grow, keep)

    def _push(self, t: float, grow: int, keep: int) -> None:
        while self.grow_low and self.grow_low[-1][1] >= grow:
            self.grow_low.pop()
        self.grow_low.append((t, grow))
        while self.keep_high and self.keep_high[-1][1] <= keep:
            self.keep_high.pop()
        self.keep_high.append((t, keep))

    def least_grow(self, now: float, window_s: float) -> int | None:
        """The least growth among the kept samples of the last window_s (None: none)."""
        return self._front(self.grow_low, now, window_s)

    def most_keep(self, now: float, window_s: float) -> int | None:
        return self._front(self.keep_high, now, window_s)

    def _front(self, extremes: deque[tuple[float, int]], now: float, window_s: float) -> int | None:
        cutoff = max(now - window_s - 1e-9, now - self.kept_s)  # (t >= cutoff, exactly as a scan of the samples)
        while extremes and extremes[0][0] < cutoff:
            extremes.popleft()
        return extremes[0][1] if extremes else None


MARGIN = 0.25  # of a pod: how far demand must exceed a size's slots before the size is outgrown
BUSY_WINDOW_S = 20.0  # with targetWait: busy slots averaged over this long (twenty looks of the operator's poll)


def waiting_slots(sample: PoolSample, rules: ScalingRules) -> float:
    """The slots the waiting jobs ask for. Without `targetWait`: one each (no job should wait). With
    it, and a known runtime: the slots that clear them within targetWait (ready x runtime / targetWait),
    never more than one each; so short jobs arriving in bursts wait up to targetWait instead of each
    burst calling for a pod per job."""
    wait, runtime_ms = rules.target_wait_s, sample.runtime_ms
    if wait is None or not runtime_ms:
        return sample.ready
    return min(sample.ready, sample.ready * runtime_ms / 1000 / wait)


def needed_pods(sample: PoolSample, replicas: int, rules: ScalingRules, *, margin: float = 0.0) -> int:
    """The pods one sample asks for, within the limits of one pool. Growing passes `margin`: demand
    must exceed a size's slots by that part of a pod before the size is outgrown, while a shrink
    needs the demand to fit the smaller size outright; so a pool whose demand hovers at its size
    neither grows nor, once grown, shrinks back at once (hysteresis)."""
    waiting = waiting_slots(sample, rules)
    slots = sample.busy + waiting if rules.target_wait_s is None else max(sample.busy, waiting)
    demand = slots / rules.concurrency
    pods = max(1, math.ceil(demand - margin - 1e-9)) if demand > 0 else 0
    if _waited_too_long(sample, rules) and not sample.starting:
        pods = max(pods, replicas + 1)
    return min(rules.max_processes, max(rules.min_processes, pods))


def _waited_too_long(sample: PoolSample, rules: ScalingRules) -> bool:
    wait = rules.target_wait_s
    return bool(wait is not None and sample.ready and (sample.oldest_s or 0.0) > wait)


def describe(pool: str, before: int, after: int, sample: PoolSample | None, concurrency: int) -> str:
    text = f"pool {pool}: {before} -> {after} pod{'' if after == 1 else 's'}"
    if sample is None:
        return text
    oldest = f", oldest {sample.oldest_s:.1f} s" if sample.oldest_s is not None and sample.ready else ""
    slots = before * concurrency
    return f"{text} ({sample.ready:g} ready{oldest}, {sample.busy:g} of {slots} slots busy)"


class Planner:
    def __init__(self, rules: ScalingRules, replicas: Mapping[str, int]) -> None:
        self.rules = rules
        self._kept_s = max(rules.cooldown_s, rules.scale_down_delay_s)
        self.tracks = {name: _Track(n, self._kept_s) for name, n in replicas.items()}

    @property
    def replicas(self) -> dict[str, int]:
        return {name: t.replicas for name, t in self.tracks.items()}

    def sync(self, replicas: Mapping[str, int]) -> None:
        """The pools' sizes as they are (someone else may have changed one, or a pool was added)."""
        for name, n in replicas.items():
            track = self.tracks.get(name)
            if track is None:
                self.tracks[name] = _Track(n, self._kept_s)
            else:
                track.replicas = n

    def step(self, now: float, samples: Mapping[str, PoolSample]) -> list[Change]:
        """Record one look at every pool (pools without a sample are held as they are) and decide.
        A sample for a pool with no size yet (its Deployment not created or not seen yet) is left out:
        there is nothing to resize until it exists."""
        rules = self.rules
        samples = {name: sample for name, sample in samples.items() if name in self.tracks}
        for name, sample in samples.items():
            track = self.tracks[name]
            track.last = sample
            sample = self._smoothed(track, now, sample)
            grow = needed_pods(sample, track.replicas, rules, margin=MARGIN)
            track.add(now, grow, needed_pods(sample, track.replicas, rules))
            if track.since is None:
                track.since = now
        proposals = {name: self._propose(now, name) for name in samples}
        return self._apply(now, self._within_total(now, proposals, samples))

    def _smoothed(self, track: _Track, now: float, sample: PoolSample) -> PoolSample:
        """With targetWait, the sample with its busy slots averaged over the last BUSY_WINDOW_S."""
        if self.rules.target_wait_s is None:
            return sample
        track.busy.append((now, sample.busy))
        while track.busy[0][0] < now - BUSY_WINDOW_S + 1e-9:
            track.busy.popleft()
        return replace(sample, busy=sum(b for _, b in track.busy) / len(track.busy))

    def _propose(self, now: float, name: str) -> tuple[int, str]:
        rules, track = self.rules, self.tracks[name]
        current = track.replicas
        latest = track.samples[-1][1]
        if current == 0 and latest > 0:
            return max(1, min(latest, rules.max_shift)), "wake"
        rested = track.changed_at is None or now - track.changed_at >= rules.cooldown_s - 1e-9
        assert track.since is not None
        if not rested:
            return current, ""
        if now - track.since >= rules.cooldown_s - 1e-9:
            up = track.least_grow(now, rules.cooldown_s)
            assert up is not None  # (this step's own sample is in the window)
            if up > current:
                waited = track.last is not None and _waited_too_long(track.last, rules)
                return min(up, current + rules.max_shift), "targetWait" if waited else "demand"
        if now - track.since >= rules.scale_down_delay_s - 1e-9:
            down = track.most_keep(now, rules.scale_down_delay_s)
            assert down is not None
            if down < current:
                return max(down, current - rules.max_shift, rules.min_processes), "idle"
        return current, ""

    def _want(self, now: float, name: str) -> int:
        """What a pool would grow to were there room: the least need of the last cooldown."""
        track = self.tracks[name]
        least = track.least_grow(now, self.rules.cooldown_s)
        return max(track.replicas if least is None else least, 0)

    def _within_total(
        self, now: float, proposals: dict[str, tuple[int, str]], samples: Mapping[str, PoolSample]
    ) -> dict[str, tuple[int, str]]:
        """When the pools want more than maxProcesses holds, each gets its share of it by load (at
        least minProcesses): a pool under its share grows into it as its own rules allow, one over
        its share gives pods back (reason `share`, by maxShift a cooldown, without waiting for
        scaleDownDelay: another pool's jobs are waiting for them)."""
        rules = self.rules
        current = {name: t.replicas for name, t in self.tracks.items()}
        cap = rules.max_processes - sum(n for name, n in current.items() if name not in proposals)
        wants = {name: max(self._want(now, name), proposals[name][0]) for name in proposals}
        if sum(wants.values()) <= cap:
            return proposals
        weight = {name: max(self._load(samples[name]), 1e-9) for name in proposals}
        share = {name: min(rules.min_processes, wants[name]) for name in proposals}
        budget = cap - sum(share.values())
        while budget > 0:
            wanting = [name for name in proposals if share[name] < wants[name]]
            if not wanting:
                break
            pick = min(wanting, key=lambda name: (share[name] / weight[name], name))
            share[pick] += 1
            budget -= 1
        out: dict[str, tuple[int, str]] = {}
        for name, (proposed, reason) in proposals.items():
            cur, track = current[name], self.tracks[name]
            rested = track.changed_at is None or now - track.changed_at >= rules.cooldown_s - 1e-9
            if share[name] < cur and rested:
                out[name] = (max(share[name], cur - rules.max_shift), "share")
            elif proposed > cur:
                out[name] = (min(proposed, max(share[name], cur)), reason)
            else:
                out[name] = (proposed, reason)
        # Pods given back arrive as the ReplicaSets remove them; growth never outruns what is free now.
        free = cap - sum(min(out[name][0], current[name]) for name in out)
        for name in sorted(out, key=lambda n: (share[n] / weight[n], n)):
            after, reason = out[name]
            grow = max(0, after - current[name])
            out[name] = (current[name] + min(grow, max(free, 0)), reason) if grow else (after, reason)
            free -= min(grow, max(free, 0))
        return {name: (n, reason if n != current[name] else "") for name, (n, reason) in out.items()}

    def _load(self, sample: PoolSample) -> float:
        """A pool's weight in the shares: its demand in slots, times its runtime when the strategy
        weighs runtime (`time`)."""
        demand = float(sample.busy + sample.ready)
        if self.rules.strategy_rule.weighs_runtime:
            return demand * (sample.runtime_ms or 1.0)
        return demand

    def _apply(self, now: float, proposals: Mapping[str, tuple[int, str]]) -> list[Change]:
        changes: list[Change] = []
        for name, (after, reason) in sorted(proposals.items()):
            track = self.tracks[name]
            if after == track.replicas:
                continue
            message = describe(name, track.replicas, after, track.last, self.rules.concurrency)
            change = Change(now, name, track.replicas, after, reason, message)
            track.replicas, track.changed_at = after, now
            changes.append(change)
        return changes
