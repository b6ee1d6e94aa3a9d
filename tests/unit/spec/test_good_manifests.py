"""Good manifests (the shipped examples and a few edge shapes) pass both the CRD path and Python."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fairway.resource.manifests import load_documents, validate_document
from support.admission import admit

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.yaml"))


def minimal(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "fairway.dev/v1alpha1",
        "kind": "QueueSupervisor",
        "metadata": {"name": "ok"},
        "spec": {"redis": {"secretRef": {"name": "redis", "key": "url"}}, **spec},
    }


GOOD = {
    "one-queue": minimal(queues=["default"]),
    "tenants-only": minimal(tenants={}),
    "tenants-only-simple": minimal(tenants={}, balance="simple", maxProcesses=1),
    "auto-with-exact-pools": minimal(queues=["a", "b"], tenants={}, balance="auto", maxProcesses=3),
    "cluster-url": minimal(queues=["a"])
    | {"spec": {"redis": {"url": "redis://r:6379", "cluster": True}, "queues": ["a"]}},
    "paused-and-weighted": minimal(queues=["a", "b"], pausedQueues=["b"], queueWeights={"a": 5}),
    "block-for-zero": minimal(queues=["a"], blockFor=0, retryAfter=90, timeout=60),
    "queue-name-limits": minimal(queues=["q" * 63, "A.b:c-d_e"]),
}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_examples_validate_both_ways(path: Path) -> None:
    for doc in load_documents(path.read_text()):
        report = validate_document(doc)
        assert report.valid, report.errors
        assert admit(doc) == []


def test_the_required_examples_exist() -> None:
    specs = [yaml.safe_load(p.read_text())["spec"] for p in EXAMPLES]
    assert any(s.get("balance", "none") == "none" and s.get("queueWeights") for s in specs)
    assert any(s.get("balance") == "auto" for s in specs)
    assert any(s.get("tenants") is not None for s in specs)


@pytest.mark.parametrize("name", sorted(GOOD))
def test_good_manifest_passes_both_ways(name: str) -> None:
    report = validate_document(GOOD[name])
    assert report.valid, report.errors
    assert admit(GOOD[name]) == []


def test_defaults_match_between_crd_and_python() -> None:
    from support.admission import apply_defaults, load_crd, object_schema

    defaulted = apply_defaults(object_schema(load_crd()), minimal(queues=["a"]))["spec"]
    spec = validate_document(minimal(queues=["a"])).spec
    assert spec is not None
    python = spec.model_dump(by_alias=True, exclude_none=True)
    for key, value in defaulted.items():
        assert python[key] == value, key
