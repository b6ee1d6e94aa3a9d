"""What the watches keep: children by owner, and supervisors without what nothing reads."""

from __future__ import annotations

from typing import Any

from fairway.resource.spec import KIND
from fairway_operator.watched import Watched


def supervisor(uid: str = "u1") -> dict[str, Any]:
    return {
        "apiVersion": "fairway.dev/v1alpha1",
        "kind": KIND,
        "metadata": {
            "name": "shop",
            "namespace": "jobs",
            "uid": uid,
            "generation": 2,
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {"f:queues": {}}}}],
        },
        "spec": {"queues": ["a"]},
        "status": {"observedGeneration": 2},
    }


def child(kind: str, name: str, owner_uid: str) -> dict[str, Any]:
    owner = {"kind": KIND, "name": "shop", "uid": owner_uid, "controller": True}
    return {
        "kind": kind,
        "metadata": {"name": name, "namespace": "jobs", "ownerReferences": [owner], "managedFields": [{}]},
        "spec": {"replicas": 2},
        "data": {"worker.yaml": "queues: [a]\n"},
    }


def test_a_supervisor_is_kept_as_seen_but_for_managed_fields_and_later_changes_to_the_event() -> None:
    watched = Watched()
    body = supervisor()
    watched.supervisor_seen(body)
    kept = watched.supervisors[("jobs", "shop")]
    assert "managedFields" not in kept["metadata"] and "managedFields" in body["metadata"]
    assert {k: v for k, v in kept.items() if k != "metadata"} == {k: v for k, v in body.items() if k != "metadata"}
    body["spec"]["queues"].append("b")
    assert kept["spec"]["queues"] == ["a"], "a copy, not the event's object"


def test_children_are_found_by_their_owners_uid_and_forgotten_when_gone() -> None:
    watched = Watched()
    watched.child_seen(child("Deployment", "shop-pool", "u1"), "Deployment")
    watched.child_seen(child("ConfigMap", "shop-pool", "u1"), "ConfigMap")
    watched.child_seen(child("ConfigMap", "old", "u0"), "ConfigMap")  # the same name's earlier supervisor
    owned = watched.owned(supervisor("u1"))
    assert [(o["kind"], o["metadata"]["name"]) for o in owned] == [
        ("ConfigMap", "shop-pool"),
        ("Deployment", "shop-pool"),
    ]
    assert all("managedFields" not in o["metadata"] for o in owned)
    assert [o["kind"] for o in watched.owned(supervisor("u1"), "Deployment")] == ["Deployment"]
    watched.child_gone("jobs", "Deployment", "shop-pool")
    assert [o["kind"] for o in watched.owned(supervisor("u1"))] == ["ConfigMap"]
