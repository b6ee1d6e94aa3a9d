"""Status is written only when something changed; conditions move only on a flip; drift is a subset check."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from fairway.plan.pools import Pool, SpecialPool
from fairway.plan.scaling import PoolSample
from fairway.queue.access.figures import QueueStats, TenantFigures, quantile_ms
from fairway.resource.manifests import validate_spec
from fairway.resource.status import ConditionType
from fairway_operator.conditions import set_condition
from fairway_operator.desired import desired
from fairway_operator.drift import drifted
from fairway_operator.names import dns_label
from fairway_operator.reconcile import _changed
from fairway_operator.report import Observations, PoolObservation, Scaled, build_status, parse_status

SPEC = {
    "redis": {"url": "redis://r:6379"},
    "queues": ["high", "low"],
    "queueWeights": {"high": 3},
    "pausedQueues": ["low"],
    "tenants": {},
}


def observations(ready: int = 2, redis_error: str | None = None, spec: dict[str, Any] = SPEC) -> Observations:
    report = validate_spec(spec, "shop")
    pool = Pool(SpecialPool.SHARED, ("high", "low"), "@tenant-")
    stats = [QueueStats("high", 5, 1, 0, 2, False, 3.4), QueueStats("low", 0, 0, 0, 0, True, None)]
    tenants = [
        TenantFigures("a", waiting=3, histogram={40: 1}),
        TenantFigures("b", quarantined=True),
        TenantFigures("c", quarantined=True, quarantine_reason="slow", in_flight=2, max_in_flight=2),
    ]
    return Observations(
        4,
        report,
        [PoolObservation(pool, "fairway-shop", 2, ready, None if redis_error else PoolSample(1, 5.0, 3.4))],
        None if redis_error else stats,
        None if redis_error else tenants,
        redis_error,
        weights=report.spec.effective_weights() if report.spec else {},
    )


def status_of(obs: Observations, previous: dict[str, Any] | None = None, now: str = "t1") -> dict[str, Any]:
    """The status as the operator writes it: built from the previous one as the API server holds it."""
    return build_status(obs, parse_status(previous), now).to_api()


def test_condition_time_moves_only_when_status_flips() -> None:
    ready = ConditionType.READY
    first = set_condition([], ready, False, "PoolsNotReady", "0/2", 1, "t1")
    same = set_condition(first, ready, False, "PoolsNotReady", "1/2", 1, "t2")
    flipped = set_condition(same, ready, True, "PoolsReady", "ok", 1, "t3")
    assert same[0].last_transition_time == "t1"
    assert flipped[0].last_transition_time == "t3"


def test_a_pass_that_observes_nothing_new_writes_nothing() -> None:
    status = status_of(observations())
    assert _changed({}, status) == status
    again = status_of(observations(), status, "t2")
    assert _changed(status, again) is None


def test_status_carries_what_users_look_at() -> None:
    status = status_of(observations())
    conditions = {c["type"]: c for c in status["conditions"]}
    assert {k: c["status"] for k, c in conditions.items()} == {
        "Valid": "True",
        "Ready": "True",
        "Progressing": "False",
        "Degraded": "False",
    }
    assert all(c["observedGeneration"] == 4 for c in conditions.values())
    assert status["observedGeneration"] == 4
    assert status["pools"] == [
        {
            "name": "fairway-shop",
            "queues": ["high", "low", "@tenants"],
            "desiredReplicas": 2,
            "readyReplicas": 2,
            "slots": 2,
            "busySlots": 1,
            "waiting": 5,
        }
    ]
    high, low = status["queues"]
    assert (high["name"], high["weight"], high["depth"], high["oldestAgeSeconds"], high["processes"]) == (
        "high",
        3,
        5,
        3.0,
        2,
    )
    assert low["paused"] is True
    assert status["tenants"] == {
        "active": 2,
        "quarantined": ["b", "c"],
        "quarantinedSlow": ["c"],
        "atCap": ["c"],
        "worstP99WaitMs": round(quantile_ms({40: 1}, 0.99) or 0),
    }


def test_a_pools_last_change_is_kept_until_the_next_and_redis_down_keeps_the_last_figures() -> None:
    scaled = observations()
    scaled.scaled = {
        SpecialPool.SHARED: Scaled("t1", "pool @all: 1 -> 2 pods (5 ready, oldest 3.4 s, 1 of 1 slots busy)")
    }
    first = status_of(scaled)
    (pool,) = first["pools"]
    assert (pool["lastScaledTime"], pool["lastScaledReason"]) == ("t1", scaled.scaled[SpecialPool.SHARED].message)
    (later,) = status_of(observations(), first, "t2")["pools"]
    assert (later["lastScaledTime"], later["lastScaledReason"]) == ("t1", pool["lastScaledReason"])
    (down,) = status_of(observations(redis_error="Redis is unreachable: refused"), first, "t3")["pools"]
    assert (down["busySlots"], down["waiting"], down["lastScaledTime"]) == (1, 5, "t1")


def test_pools_behind_are_progressing_not_ready() -> None:
    conditions = {c["type"]: c for c in status_of(observations(ready=1))["conditions"]}
    assert conditions["Ready"]["status"] == "False" and conditions["Progressing"]["status"] == "True"
    assert "fairway-shop 1/2" in conditions["Ready"]["message"]


def test_unreachable_redis_is_degraded_and_keeps_the_last_figures() -> None:
    healthy = status_of(observations())
    down = status_of(observations(redis_error="Redis is unreachable: refused"), healthy, "t2")
    degraded = next(c for c in down["conditions"] if c["type"] == "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "RedisUnreachable")
    assert down["queues"] == healthy["queues"]


def test_an_invalid_spec_keeps_the_last_pools_and_says_why() -> None:
    healthy = status_of(observations())
    bad = status_of(observations(spec={**SPEC, "balance": "auto"}), healthy, "t2")
    valid = next(c for c in bad["conditions"] if c["type"] == "Valid")
    assert valid["status"] == "False" and "The [shop.queueWeights] option" in valid["message"]
    assert bad["pools"] == healthy["pools"]


def test_drift_ignores_what_the_server_adds_and_catches_what_a_human_changes() -> None:
    spec = validate_spec(SPEC, "shop").spec
    assert spec is not None
    body = {"metadata": {"name": "shop", "namespace": "jobs", "uid": "u"}, "spec": SPEC}
    (pool,) = desired(body, spec, {})
    cm, dep = pool.objects
    served = {
        **dep,
        "metadata": {**dep["metadata"], "resourceVersion": "9", "labels": {**dep["metadata"]["labels"], "team": "x"}},
        "spec": {**dep["spec"], "progressDeadlineSeconds": 600, "revisionHistoryLimit": 10},
    }
    assert not drifted(dep, served)
    container = {**dep["spec"]["template"]["spec"]["containers"][0], "image": "evil"}
    tampered = {
        **served,
        "spec": {
            **served["spec"],
            "template": {
                **dep["spec"]["template"],
                "spec": {**dep["spec"]["template"]["spec"], "containers": [container]},
            },
        },
    }
    assert drifted(dep, tampered)
    assert drifted(cm, {**cm, "data": {"worker.yaml": "queues: []"}})
    assert not drifted(cm, {**cm, "metadata": {**cm["metadata"], "uid": "x"}})


def test_dns_labels() -> None:
    assert dns_label("fairway", "shop") == "fairway-shop"
    assert dns_label("Shop") != dns_label("shop") and len(dns_label("Shop")) <= 63
    assert len(dns_label("x" * 300)) == 63
    assert dns_label("a.b") != dns_label("a-b")


def test_a_child_found_as_rendered_is_compared_again_only_when_either_side_is_another_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import copy

    import fairway_operator.reconcile as reconcile_module
    from fairway_operator.reconcile import Reconciler

    spec = validate_spec(SPEC, "shop").spec
    assert spec is not None
    body = {"metadata": {"name": "shop", "namespace": "jobs", "uid": "u"}, "spec": SPEC}
    objects = [o for pool in desired(body, spec, {}) for o in pool.objects]
    compared: list[str] = []
    real_drifted = reconcile_module.drifted

    def counting(wanted: dict[str, Any], actual: dict[str, Any]) -> bool:
        compared.append(wanted["kind"])
        return real_drifted(wanted, actual)

    monkeypatch.setattr(reconcile_module, "drifted", counting)
    reconciler = Reconciler(kube=None, secrets=None)  # type: ignore[arg-type]  # (no I/O here)
    owned = [copy.deepcopy(o) for o in objects]
    assert reconciler._missing_or_drifted(objects, owned) == [] and compared == ["ConfigMap", "Deployment"]
    assert reconciler._missing_or_drifted(objects, owned) == [] and len(compared) == 2, "not compared again"

    cm, dep = objects
    edited = copy.deepcopy(dep)
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = "evil"
    reconciler.seen("jobs", "Deployment", dep["metadata"]["name"])  # the watch's next copy of it
    assert reconciler._missing_or_drifted(objects, [owned[0], edited]) == [dep] and compared[2:] == ["Deployment"]
    assert reconciler._missing_or_drifted(objects, [owned[0]]) == [dep], "missing"
    rendered_again = copy.deepcopy(cm)  # another spec rendering the same ConfigMap: compared afresh
    assert reconciler._missing_or_drifted([rendered_again], owned) == [] and compared[-1] == "ConfigMap"


def test_pods_up_without_redis_are_not_ready_and_say_why_at_a_glance() -> None:
    conditions = {
        c["type"]: c for c in status_of(observations(redis_error="Redis is unreachable: refused"))["conditions"]
    }
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("False", "RedisUnreachable")
    assert "cannot work: Redis is unreachable" in conditions["Ready"]["message"]
    forbidden = replace(
        observations(redis_error="the operator may not read Secret 'r'"), redis_reason="SecretForbidden"
    )
    conditions = {c["type"]: c for c in status_of(forbidden)["conditions"]}
    assert conditions["Ready"]["reason"] == conditions["Degraded"]["reason"] == "SecretForbidden", "not 'unreachable'"


def test_a_queue_another_supervisor_serves_on_the_same_redis_is_degraded_but_ready() -> None:
    shared = replace(observations(), shared="on the same Redis: high also served by jobs/other: ...")
    conditions = {c["type"]: c for c in status_of(shared)["conditions"]}
    assert conditions["Ready"]["status"] == "True"
    assert (conditions["Degraded"]["status"], conditions["Degraded"]["reason"]) == ("True", "SharedQueue")
    assert "high also served by jobs/other" in conditions["Degraded"]["message"]


def test_kubectl_get_shows_what_is_wrong_in_a_column() -> None:
    from fairway.resource.crd import crd

    columns = {c["name"]: c["jsonPath"] for c in crd()["spec"]["versions"][0]["additionalPrinterColumns"]}
    assert columns["Degraded"] == '.status.conditions[?(@.type=="Degraded")].reason'
