"""The planner (pure, microseconds): sizes in job slots, stability windows, hysteresis, scale to zero,
the total cap by load share; and its decisions on the benchmark traces, through the simulator."""

from __future__ import annotations

import importlib.util
import itertools
import math
from pathlib import Path

import pytest
import yaml

from fairway.plan.scaling import Planner, PoolSample, ScalingRules, needed_pods
from fairway.resource.balance import ScalingStrategy
from fairway.resource.spec import QueueSupervisorSpec
from fairway.simulate.run import simulate
from fairway.simulate.trace import parse

TRACES = Path(__file__).parents[3] / "bench" / "traces"
RULES = ScalingRules(
    min_processes=0, max_processes=20, max_shift=10, cooldown_s=3, scale_down_delay_s=60, concurrency=8
)


def run(planner: Planner, samples: dict[str, PoolSample], seconds: int, start: int = 0) -> list[tuple[float, int, int]]:
    out = []
    for t in range(start, start + seconds):
        out += [(c.t_s, c.before, c.after) for c in planner.step(float(t), samples)]
    return out


def test_pods_are_demand_in_slots_over_concurrency() -> None:
    assert needed_pods(PoolSample(busy=30, ready=100), 1, RULES) == math.ceil(130 / 8)
    assert needed_pods(PoolSample(busy=0, ready=0), 3, RULES) == 0
    assert needed_pods(PoolSample(busy=0, ready=1), 0, RULES) == 1
    assert needed_pods(PoolSample(busy=0, ready=10_000), 1, RULES) == 20, "within maxProcesses"
    assert needed_pods(PoolSample(busy=8, ready=1), 1, RULES, margin=0.25) == 1, "1/8 of a pod over: not outgrown"
    assert needed_pods(PoolSample(busy=8, ready=3), 1, RULES, margin=0.25) == 2


def test_target_wait_asks_one_more_pod_while_the_oldest_job_waits_too_long() -> None:
    rules = ScalingRules(min_processes=1, max_processes=10, concurrency=8, target_wait_s=5)
    assert needed_pods(PoolSample(busy=8, ready=1, oldest_s=6.0), 1, rules) == 2
    assert needed_pods(PoolSample(busy=8, ready=1, oldest_s=4.0), 1, rules) == 1, "waiting, but within targetWait"
    assert needed_pods(PoolSample(busy=2, ready=0, oldest_s=None), 3, rules) == 1
    late = PoolSample(busy=8, ready=1, oldest_s=6.0, starting=1)
    assert needed_pods(late, 2, rules) == 1, "the pod asked for is still starting: no second one for the same wait"


def test_with_target_wait_a_look_right_after_a_burst_does_not_size_the_pool() -> None:
    """Jobs arrive in a burst each second and take 1.5 of 4 slots' time on average: a look that lands
    just after a burst sees every slot busy, one a moment later sees none. With targetWait the pool
    is sized for the busy slots on average, so it neither grows on the bursts nor keeps a second pod."""
    rules = ScalingRules(
        min_processes=1, max_processes=10, cooldown_s=3, scale_down_delay_s=60, concurrency=4, target_wait_s=2
    )
    looks = [PoolSample(busy=4, ready=2, oldest_s=0.1, runtime_ms=100), PoolSample(busy=0, ready=0)]
    planner = Planner(rules, {"a": 2})
    changes = [c for t in range(200) for c in planner.step(float(t), {"a": looks[t % 3 != 0]})]
    assert [(c.before, c.after) for c in changes] == [(2, 1)], "1.3 busy slots of 4 on average: one pod"
    without = Planner(ScalingRules(min_processes=1, max_processes=10, concurrency=4), {"a": 2})
    assert not [c for t in range(200) for c in without.step(float(t), {"a": looks[t % 3 != 0]})], (
        "without targetWait no job should wait: the bursts keep both pods"
    )


def test_target_wait_sizes_waiting_jobs_by_the_slots_that_clear_them_in_time() -> None:
    rules = ScalingRules(min_processes=0, max_processes=20, concurrency=4, target_wait_s=2)
    burst = PoolSample(busy=0, ready=80, oldest_s=0.1, runtime_ms=50)  # 4 slot-seconds of work
    assert needed_pods(burst, 1, rules) == 1, "80 x 50 ms clear in 2 s on 2 slots: one pod"
    assert needed_pods(PoolSample(busy=0, ready=80, runtime_ms=5000), 1, rules) == 20, "long jobs: a slot each"
    assert needed_pods(PoolSample(busy=0, ready=80), 1, rules) == 20, "unknown runtime: a slot each"


def test_a_pool_at_zero_wakes_at_its_first_job_at_once() -> None:
    planner = Planner(RULES, {"a": 0})
    assert run(planner, {"a": PoolSample(0, 0)}, 10) == []
    (change,) = planner.step(10.0, {"a": PoolSample(0, 1)})
    assert (change.before, change.after, change.reason) == (0, 1, "wake")


def test_a_pool_whose_deployment_is_not_there_yet_is_left_out_until_it_is() -> None:
    """The operator polls a new supervisor while its Deployments are still being created: the
    pools it has no size for yet are skipped (this raised KeyError for every new supervisor)."""
    planner = Planner(RULES, {"a": 1})
    busy = {"a": PoolSample(8, 40), "b": PoolSample(8, 40)}
    changes = run(planner, busy, 4)
    assert [c[1:] for c in changes] == [(1, 6)] and set(planner.replicas) == {"a"}
    planner.sync({"a": 6, "b": 1})
    assert [c[1:] for c in run(planner, busy, 4, start=4)] == [(1, 6)]


def test_growth_needs_demand_that_persisted_for_a_cooldown() -> None:
    planner = Planner(RULES, {"a": 1})
    run(planner, {"a": PoolSample(8, 0)}, 5)
    assert planner.step(5.0, {"a": PoolSample(8, 40)}) == [], "one look is a blip"
    assert planner.step(6.0, {"a": PoolSample(8, 0)}) == []
    changes = run(planner, {"a": PoolSample(8, 40)}, 4, start=7)
    assert changes == [(10.0, 1, 6)], "up to the least need seen over the cooldown"  # ceil(48 / 8)


def test_shrinking_waits_for_scale_down_delay_and_moves_by_max_shift() -> None:
    rules = ScalingRules(
        min_processes=1, max_processes=10, max_shift=2, cooldown_s=3, scale_down_delay_s=60, concurrency=1
    )
    planner = Planner(rules, {"a": 6})
    changes = run(planner, {"a": PoolSample(1, 0)}, 70)
    assert changes[0] == (60.0, 6, 4), "not before 60 s below the size"
    assert changes == [(60.0, 6, 4), (63.0, 4, 2), (66.0, 2, 1)], "maxShift per cooldown"


def test_nothing_changes_while_demand_sits_inside_the_size() -> None:
    planner = Planner(RULES, {"a": 2})
    samples = [PoolSample(b, r) for b, r in [(9, 0), (16, 0), (12, 1), (10, 0), (16, 2)] * 40]  # 9-18 slots of 16
    assert [c for t, s in enumerate(samples) for c in planner.step(float(t), {"a": s})] == []


def test_the_total_is_capped_and_handed_out_by_load_share() -> None:
    rules = ScalingRules(
        min_processes=1, max_processes=10, max_shift=10, cooldown_s=1, concurrency=1, strategy=ScalingStrategy.SIZE
    )
    planner = Planner(rules, {"big": 1, "small": 1})
    samples = {"big": PoolSample(1, 299), "small": PoolSample(1, 99)}
    run(planner, samples, 3)
    assert planner.replicas == {"big": 7, "small": 3}
    assert sum(planner.replicas.values()) == 10


def test_a_pool_resized_by_someone_else_is_taken_as_it_is() -> None:
    planner = Planner(RULES, {"a": 1})
    planner.sync({"a": 4, "b": 2})
    assert planner.replicas == {"a": 4, "b": 2}


def spec_of(name: str) -> QueueSupervisorSpec:
    doc = yaml.safe_load((TRACES / name).read_text())
    return QueueSupervisorSpec.model_validate(doc["spec"], context={"name": doc["metadata"]["name"]})


def replay(spec_file: str, trace: str, policy: str = "fairway", duration_s: float | None = None, **spec: object):  # type: ignore[no-untyped-def]
    supervisor = spec_of(spec_file).model_copy(update=spec)
    prefix = supervisor.tenants.queue_prefix if supervisor.tenants else None
    with (TRACES / trace).open() as handle:
        arrivals = parse(handle, trace, set(supervisor.queues), prefix)
    return simulate(supervisor, arrivals, policy, duration_s=duration_s)


def test_steady_light_load_changes_at_most_once_per_20_cooldowns() -> None:
    result = replay("three-queues.yaml", "steady.csv")
    late = [c for c in result.changes if c.t_s >= 60]
    assert len(late) <= (600 - 60) / 3 / 20, [c.message for c in late]
    assert replay("three-queues.yaml", "steady.csv", "horizon").replica_changes > 50, "the baseline flaps"


def test_near_idle_jitter_settles_and_never_climbs() -> None:
    result = replay("three-queues.yaml", "jitter.csv")
    # One step up at most (a second pod for the pool whose jitter outgrew one), then no change: no
    # shrink and regrow, which is what flapping is.
    assert len(result.changes) <= 1 and all(c.after > c.before for c in result.changes), result.changes
    peak = 2  # jobs arriving in one second on a queue; concurrency 1
    assert all(c.after <= peak + 1 for c in result.changes)
    assert replay("three-queues.yaml", "jitter.csv", "horizon").replica_changes > 50, "the baseline flaps"


def test_saturated_pools_split_max_processes_by_load_share() -> None:
    rules = ScalingRules(
        min_processes=1, max_processes=10, max_shift=1, cooldown_s=1, concurrency=1, strategy=ScalingStrategy.SIZE
    )
    planner = Planner(rules, {"high": 1, "low": 1})
    samples = {"high": PoolSample(5, 895), "low": PoolSample(5, 95)}  # both want far more than 10
    seen = []
    for t in range(40):
        planner.step(float(t), samples)
        seen.append(planner.replicas)
    assert seen[-1] == {"high": 9, "low": 1}, "900 : 100 of 10 pods"
    assert all(sum(r.values()) <= 10 for r in seen)
    assert all(abs(a[p] - b[p]) <= 1 for a, b in itertools.pairwise(seen) for p in a), "maxShift"


def test_a_burst_gets_its_pods_within_two_cooldowns_where_max_shift_allows() -> None:
    result = replay("three-queues.yaml", "burst.csv", balance_max_shift=10)
    ups = [c for c in result.changes if c.after > c.before]
    assert ups and ups[-1].t_s - 10 <= 2 * 3 + 1, [(c.t_s, c.after) for c in ups]
    assert max(c.after for c in ups) == 8, "10 processes, 1 kept by each of the two other pools"
    assert result.jobs_done == 10_001


def test_noisy_tenant_pool_scales_from_zero_and_back() -> None:
    result = replay("tenants.yaml", "noisy_tenant.csv", duration_s=500)
    assert result.changes[0].reason == "wake" and result.changes[0].before == 0
    assert result.changes[-1].after == 0, "back to zero once the trace is done"
    assert result.jobs_done == 5000 + 299 * 20


@pytest.mark.parametrize("policy", ["fairway", "horizon", "keda"])
def test_every_policy_finishes_every_job(policy: str) -> None:
    assert replay("three-queues.yaml", "steady.csv", policy).jobs_done == 5385


def test_a_diurnal_day_with_target_wait_beats_horizon_on_wait_and_pod_seconds(tmp_path: Path) -> None:
    """The issue's diurnal target on bench/traces' seeded 24-hour trace (8.6 million jobs, generated
    here, not committed): wait p99 no worse than Horizon's arithmetic's, with at most 60 % of its
    pod-seconds, and a few dozen changes a day where Horizon makes tens of thousands."""
    spec = importlib.util.spec_from_file_location("make_traces", TRACES / "make_traces.py")
    assert spec and spec.loader
    make_traces = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_traces)
    make_traces.write_all(tmp_path)
    supervisor = spec_of("diurnal-targetwait.yaml")
    with (tmp_path / "diurnal.csv").open() as handle:
        arrivals = parse(handle, "diurnal.csv", set(supervisor.queues), None)
    fairway, horizon = (simulate(supervisor, arrivals, policy) for policy in ("fairway", "horizon"))
    assert fairway.jobs_done == horizon.jobs_done == sum(a.jobs for a in arrivals)
    p99 = {name: max(w["p99"] for w in r.wait_ms.values()) for name, r in (("fw", fairway), ("hz", horizon))}
    assert p99["fw"] <= p99["hz"], p99
    assert fairway.pod_seconds <= 0.6 * horizon.pod_seconds, fairway.pod_seconds / horizon.pod_seconds
    assert fairway.replica_changes <= 100 < horizon.replica_changes
