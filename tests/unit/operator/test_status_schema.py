"""Every status the operator can write is one the API server keeps whole: it validates against the
CRD's status schema and declares every field it carries (an undeclared one would be pruned)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fairway.plan.pools import pools
from fairway.queue.access.figures import QueueStats, TenantFigures
from fairway.resource.manifests import validate_spec
from fairway_operator.report import Observations, PoolObservation, build_status, parse_status
from support.admission import status_rejections

SPECS = [
    {"redis": {"url": "redis://r:6379"}, "queues": ["high", "low"], "queueWeights": {"high": 3}, "tenants": {}},
    {"redis": {"url": "redis://r:6379"}, "queues": ["a", "b", "c"], "balance": "auto", "maxProcesses": 6},
    {"redis": {"url": "redis://r:6379"}, "tenants": {"queuePrefix": "t-"}, "balance": "simple"},
    {"redis": {"url": "redis://r:6379"}, "queues": ["a"], "balance": "auto", "queueWeights": {"a": 2}},  # invalid
]

counts = st.integers(min_value=0, max_value=10**9)
stats = st.builds(
    QueueStats, st.just("q"), counts, counts, counts, counts, st.booleans(), st.none() | st.floats(0, 1e9)
)
figures = st.builds(
    TenantFigures,
    st.text("abc0123456789-", min_size=1, max_size=64),
    waiting=counts,
    in_flight=counts,
    completed=counts,
    failed=counts,
    quarantined=st.booleans(),
    histogram=st.dictionaries(st.integers(0, 120), st.integers(1, 1000), max_size=5),
)


@settings(max_examples=150, deadline=None)
@given(
    spec=st.sampled_from(SPECS),
    ready=st.integers(0, 20),
    queue_stats=st.none() | st.lists(stats, max_size=3),
    tenant_figures=st.none() | st.lists(figures, max_size=150),
    redis_error=st.none() | st.text(max_size=200),
    api_error=st.none() | st.text(max_size=200),
    previous_pass=st.booleans(),
)
def test_every_status_validates_against_the_crd_status_schema(
    spec, ready, queue_stats, tenant_figures, redis_error, api_error, previous_pass
) -> None:
    report = validate_spec(spec, "shop")
    pool_obs = (
        [PoolObservation(p, f"fairway-shop-{i}", 2, ready) for i, p in enumerate(pools(report.spec))]
        if report.spec
        else []
    )
    observations = Observations(
        7,
        report,
        pool_obs,
        queue_stats,
        tenant_figures,
        redis_error,
        api_error,
        weights=report.spec.effective_weights() if report.spec else {},
    )
    previous = build_status(observations, parse_status(None), "t0").to_api() if previous_pass else None
    status = build_status(observations, parse_status(previous), "2026-12-03T00:00:00Z").to_api()
    assert status_rejections(status) == []
