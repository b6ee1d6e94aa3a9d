"""Generating the QueueSupervisor CRD from the pydantic model (what `fairway crd` prints).

The committed `crds/queuesupervisors.fairway.dev.yaml` is this function's output, and a test fails
when they differ. Pydantic speaks JSON Schema 2020-12; the API server wants a *structural* OpenAPI v3
schema: no `$ref`, no `anyOf` with `null`, no `additionalProperties: false`, boolean
`exclusiveMinimum`, free-form objects marked `x-kubernetes-preserve-unknown-fields`. The conversion
below does exactly that and nothing else.
"""

from __future__ import annotations

from typing import Any

import yaml

from fairway.resource.rules import crd_validations
from fairway.resource.spec import API_GROUP, API_VERSION, KIND, PLURAL, QueueSupervisorSpec
from fairway.resource.status import QueueSupervisorStatus

CRD_NAME = f"{PLURAL}.{API_GROUP}"
_DROP = {"title", "$defs", "propertyNames"}


def _structural(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_structural(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _structural(merged, defs)
    if "anyOf" in node:
        options = [opt for opt in node["anyOf"] if opt.get("type") != "null"]
        if len(options) != 1:
            raise ValueError(f"cannot express a union in a structural schema: {node}")
        merged = {**options[0], **{k: v for k, v in node.items() if k != "anyOf"}}
        return _structural(merged, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP or (key == "default" and value is None):
            continue
        if key == "additionalProperties":
            if value is True:
                out["x-kubernetes-preserve-unknown-fields"] = True
            elif isinstance(value, dict):
                out[key] = _structural(value, defs)
            continue  # `false` is the API server's default for a structural schema (unknown fields pruned)
        if key == "exclusiveMinimum" and not isinstance(value, bool):
            out["minimum"], out["exclusiveMinimum"] = value, True
            continue
        if key == "properties":
            out[key] = {name: _structural(sub, defs) for name, sub in value.items()}
            continue
        if key == "patternProperties":
            # Map keys cannot carry a pattern in a structural schema; the CEL rules check the keys.
            (value_schema,) = value.values()
            out["additionalProperties"] = _structural(value_schema, defs)
            continue
        out[key] = _structural(value, defs)
    return out


def _model_schema(model: type[Any]) -> dict[str, Any]:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    schema: dict[str, Any] = _structural(raw, raw.get("$defs", {}))
    return schema


def spec_schema() -> dict[str, Any]:
    """The spec's structural schema with the CEL rules attached where each applies."""
    schema = _model_schema(QueueSupervisorSpec)
    for scope, node in (("spec", schema), ("spec.redis", schema["properties"]["redis"])):
        node["x-kubernetes-validations"] = crd_validations(scope)
    return schema


def status_schema() -> dict[str, Any]:
    return _model_schema(QueueSupervisorStatus)


def _printer_columns() -> list[dict[str, Any]]:
    return [
        {"name": "Balance", "type": "string", "jsonPath": ".spec.balance"},
        {"name": "Queues", "type": "string", "jsonPath": ".spec.queues"},
        {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
        # What is wrong at a glance (AsExpected, RedisUnreachable, SecretForbidden, SharedQueue, ...)
        {"name": "Degraded", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Degraded")].reason'},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]


def crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": API_GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": KIND.lower(),
                "shortNames": ["qsup"],
                "categories": ["fairway"],
            },
            "versions": [
                {
                    "name": API_VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": _printer_columns(),
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "A pool of Fairway workers serving Redis queues fairly.",
                            "required": ["spec"],
                            "x-kubernetes-validations": crd_validations(""),
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec_schema(),
                                "status": status_schema(),
                            },
                        }
                    },
                }
            ],
        },
    }


def crd_yaml() -> str:
    header = "# Generated by `fairway crd` from fairway.resource.spec; do not edit by hand.\n"
    return header + yaml.safe_dump(crd(), sort_keys=False, width=100)
