"""The committed CRD is `fairway crd`'s output, structural, and cheap enough for the API server's CEL budget."""

from __future__ import annotations

import re
from typing import Any

import yaml

from fairway.resource.crd import crd, crd_yaml
from fairway.resource.status import ConditionType
from support.admission import CRD_PATH, object_schema


def test_committed_crd_equals_generated() -> None:
    assert CRD_PATH.read_text() == crd_yaml(), "run: fairway crd > crds/queuesupervisors.fairway.dev.yaml"


def _nodes(schema: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    out = [(path, schema)]
    for name, sub in schema.get("properties", {}).items():
        out += _nodes(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        out += _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        out += _nodes(schema["additionalProperties"], f"{path}{{}}")
    return out


def test_schema_is_structural() -> None:
    for path, node in _nodes(object_schema(crd())):
        # (a free-form value, a schedule's argument, is the one node the API server lets go untyped)
        assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields"), f"{path} has no type"
        for forbidden in ("$ref", "anyOf", "oneOf", "allOf", "patternProperties", "nullable", "uniqueItems"):
            assert forbidden not in node, f"{path} uses {forbidden}"
        assert node.get("additionalProperties") is not False, path
        assert not ("properties" in node and "additionalProperties" in node), path
        if "exclusiveMinimum" in node:
            assert node["exclusiveMinimum"] is True and "minimum" in node, path


def test_every_field_a_rule_touches_is_bounded() -> None:
    """Unbounded lists, maps or strings make the API server refuse the CRD ("rule cost exceeds budget")."""
    schema = object_schema(crd())
    for path, node in _nodes(schema):
        for rule in node.get("x-kubernetes-validations", []):
            for chain, call in re.findall(r"self((?:\.[A-Za-z_]+)+)(\(?)", rule["rule"]):
                names = chain.strip(".").split(".")[: -1 if call else None]  # `.matches(` is a method
                target = node
                for name in names:
                    target = target["properties"][name]
                    kind = target["type"]
                    if kind == "array":
                        assert "maxItems" in target, f"{path}{chain}: list without maxItems"
                        if target["items"]["type"] == "string":
                            assert "maxLength" in target["items"], f"{path}{chain}[]: string without maxLength"
                    elif kind == "object" and "additionalProperties" in target:
                        assert "maxProperties" in target, f"{path}{chain}: map without maxProperties"
                    elif kind == "string":
                        assert "maxLength" in target or "enum" in target, f"{path}{chain}: unbounded string"


def test_crd_shape_for_kubectl() -> None:
    doc = yaml.safe_load(CRD_PATH.read_text())
    version = doc["spec"]["versions"][0]
    assert doc["metadata"]["name"] == "queuesupervisors.fairway.dev"
    assert doc["spec"]["names"]["shortNames"] == ["qsup"]
    assert doc["spec"]["scope"] == "Namespaced"
    assert version["subresources"] == {"status": {}}
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns["Ready"] == '.status.conditions[?(@.type=="Ready")].status'
    assert set(columns) == {"Balance", "Queues", "Ready", "Degraded", "Age"}
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert set(status["properties"]) == {
        "observedGeneration",
        "conditions",
        "pools",
        "queues",
        "tenants",
        "schedules",
        "warnings",
    }
    condition = status["properties"]["conditions"]["items"]
    assert condition["properties"]["type"]["enum"] == [t.value for t in ConditionType]
    assert {"type", "status", "reason", "lastTransitionTime"} <= set(condition["required"])


def test_kopf_state_lives_in_annotations_not_in_pruned_status() -> None:
    import kopf

    from fairway_operator.settings import NoDiffBase, configure_persistence

    settings = kopf.OperatorSettings()
    configure_persistence(settings)
    assert isinstance(settings.persistence.progress_storage, kopf.AnnotationsProgressStorage)
    assert isinstance(settings.persistence.diffbase_storage, NoDiffBase)
    status = object_schema(crd())["properties"]["status"]
    assert "kopf" not in status["properties"]
    assert not status.get("x-kubernetes-preserve-unknown-fields")


def test_the_operator_has_event_handlers_only_so_it_needs_no_diff_base() -> None:
    """NoDiffBase is right only while no handler diffs against a last-handled state: a change, resume,
    timer, daemon or index handler added here needs kopf's annotation diff base back (settings.py)."""
    import kopf

    import fairway_operator.handlers  # noqa: F401  (registers the handlers)
    from fairway_operator.settings import NoDiffBase

    registry = kopf.get_default_registry()
    assert [h.fn.__name__ for h in registry._watching.get_all_handlers()] == [
        "supervisor_changed",
        "child_changed",
        "child_changed",
    ]
    for kind in ("_changing", "_spawning", "_indexing", "_webhooks"):
        assert not list(getattr(registry, kind).get_all_handlers()), kind
    storage = NoDiffBase()
    body = kopf.Body({"metadata": {"name": "a", "annotations": {"x": "1"}}, "spec": {"queues": ["q"]}})
    assert storage.fetch(body=body) is None
    assert storage.build(body=body) == {}
