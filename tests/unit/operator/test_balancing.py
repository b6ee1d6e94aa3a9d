"""The auto-balancer's arithmetic (Horizon's AutoScaler semantics): convergence, stability, bounds, shift."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from fairway.resource.balance import ScalingStrategy
from fairway.simulate.horizon import Limits, PoolLoad, pool_load, rebalance, targets

LIMITS = Limits(min_processes=1, max_processes=10, max_shift=1, strategy=ScalingStrategy.SIZE)


def step(
    replicas: dict[str, int],
    sizes: dict[str, int],
    limits: Limits = LIMITS,
    runtimes: dict[str, float] | None = None,
    by_share: bool = True,
) -> dict[str, int]:
    loads = [PoolLoad(q, sizes[q], (runtimes or {}).get(q), replicas[q]) for q in replicas]
    return rebalance(loads, limits, by_share)


def test_a_steady_skewed_load_converges_to_its_share_then_stays() -> None:
    replicas = {"busy": 1, "quiet": 1}
    history = []
    for _ in range(20):
        replicas = step(replicas, {"busy": 900, "quiet": 100})
        history.append(dict(replicas))
    assert replicas == {"busy": 9, "quiet": 1}
    assert history[-1] == history[-5], "no oscillation on a steady load"
    assert all(abs(b["busy"] - a["busy"]) <= 1 for a, b in itertools.pairwise(history))


def test_time_strategy_weighs_by_runtime() -> None:
    limits = Limits(1, 10, 10, ScalingStrategy.TIME)
    loads = [PoolLoad("slow", 100, 90.0, 1), PoolLoad("fast", 100, 10.0, 1)]
    assert targets(loads, limits, True) == {"slow": 9.0, "fast": 1.0}
    assert rebalance(loads, limits) == {"slow": 9, "fast": 1}


def test_unknown_runtimes_fall_back_to_size() -> None:
    loads = [PoolLoad("a", 30, None, 1), PoolLoad("b", 10, None, 1)]
    assert targets(loads, Limits(1, 8, 1, ScalingStrategy.TIME), True) == {"a": 6.0, "b": 2.0}


def test_idle_pools_shrink_to_min_one_step_at_a_time() -> None:
    replicas = {"a": 5, "b": 5}
    replicas = step(replicas, {"a": 0, "b": 0})
    assert replicas == {"a": 4, "b": 4}
    for _ in range(10):
        replicas = step(replicas, {"a": 0, "b": 0})
    assert replicas == {"a": 1, "b": 1}


def test_growing_never_takes_the_supervisor_above_max() -> None:
    limits = Limits(1, 6, 3, ScalingStrategy.SIZE)
    replicas = step({"a": 3, "b": 3}, {"a": 100, "b": 100}, limits)
    assert sum(replicas.values()) <= 6


def test_balance_none_sizes_one_pool_by_the_backlog_between_min_and_max() -> None:
    limits = Limits(2, 8, 2, ScalingStrategy.TIME)
    assert step({"@all": 2}, {"@all": 3}, limits, by_share=False) == {"@all": 3}
    assert step({"@all": 2}, {"@all": 500}, limits, by_share=False) == {"@all": 4}, "shift-limited"
    assert step({"@all": 8}, {"@all": 0}, limits, by_share=False) == {"@all": 6}
    assert step({"@all": 2}, {"@all": 0}, limits, by_share=False) == {"@all": 2}, "never below min"


@given(
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 30)), min_size=1, max_size=6),
    st.integers(1, 5),
    st.integers(1, 40),
    st.integers(1, 5),
    st.sampled_from(["time", "size"]),
)
def test_bounds_and_shift_always_hold(
    pools: list[tuple[int, int]], least: int, most: int, shift: int, strategy: str
) -> None:
    most = max(most, least * len(pools))
    limits = Limits(least, most, shift, strategy)
    loads = [PoolLoad(f"p{i}", size, 5.0, min(max(r, least), most)) for i, (size, r) in enumerate(pools)]
    after = rebalance(loads, limits)
    for load in loads:
        assert after[load.name] >= least
        assert abs(after[load.name] - load.replicas) <= shift
        if after[load.name] > load.replicas:
            assert after[load.name] <= most


def test_pool_load_sums_sizes_and_weights_runtimes() -> None:
    load = pool_load("all", ["a", "b", "c"], {"a": 30, "b": 10, "c": 0}, {"a": 10.0, "b": 50.0, "c": None}, 2)
    assert (load.size, load.runtime_ms, load.replicas) == (40, 20.0, 2)
    assert pool_load("x", ["q"], {"q": 5}, {"q": None}, 1).runtime_ms is None
