"""The scaling poll's pure parts: which pods are still starting (from the Deployment status the
controller keeps) and each pod's deletion cost from its workers' heartbeats."""

from __future__ import annotations

from typing import Any

from fairway_operator.desired import POOL_KEY
from fairway_operator.scaling import Supervised, deletion_costs


def deployment(pool: str, replicas: int, ready: int | None) -> dict[str, Any]:
    status = {} if ready is None else {"readyReplicas": ready}
    return {
        "metadata": {"name": f"d-{pool}", "annotations": {POOL_KEY: pool}},
        "spec": {"replicas": replicas},
        "status": status,
    }


def test_pods_asked_for_but_not_ready_are_starting() -> None:
    sup = Supervised({}, None, [deployment("a", 3, 1), deployment("b", 2, None), deployment("c", 0, None)])  # type: ignore[arg-type]
    assert sup.starting() == {"a": 2, "b": 2, "c": 0}, "no status yet: every pod asked for is starting"
    assert Supervised({}, None, [deployment("a", 1, 3)]).starting() == {"a": 0}, "more ready than asked: scaling in"  # type: ignore[arg-type]


def test_a_pods_deletion_cost_is_its_live_workers_busy_slots() -> None:
    pods = [{"metadata": {"name": n}} for n in ("p-busy", "p-idle", "p-new")]
    beats = [
        {"name": "p-busy:11", "busy": 3},
        {"name": "p-busy:12", "busy": "2"},
        {"name": "p-idle:5", "busy": 0},
        {"name": "x:1", "busy": "?"},
    ]
    assert deletion_costs(pods, beats) == {"p-busy": 5, "p-idle": 0, "p-new": 0}
