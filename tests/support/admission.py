"""What the API server does to a QueueSupervisor at admission, done offline against the committed CRD.

In the API server's order: apply schema defaults, reject unknown fields (kubectl's default strict
field validation), check the OpenAPI schema, check `x-kubernetes-list-type: set` uniqueness, then
evaluate every `x-kubernetes-validations` rule with `self` bound to the object it is attached to.
CEL runs on cel-python; the cost budget is checked separately (bounds on what rules touch).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import yaml

CRD_PATH = Path(__file__).resolve().parents[2] / "crds" / "queuesupervisors.fairway.dev.yaml"


@dataclass(frozen=True)
class Rejection:
    path: str
    message: str
    source: str  # "schema", "unknown-field", "set", or "cel"


def load_crd() -> dict[str, Any]:
    return yaml.safe_load(CRD_PATH.read_text())


def object_schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def apply_defaults(schema: dict[str, Any], value: Any) -> Any:
    if isinstance(value, dict) and "properties" in schema:
        for name, sub in schema["properties"].items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                value[name] = apply_defaults(sub, value[name])
    elif isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        for key in value:
            value[key] = apply_defaults(schema["additionalProperties"], value[key])
    elif isinstance(value, list) and "items" in schema:
        return [apply_defaults(schema["items"], item) for item in value]
    return value


def _walk(schema: dict[str, Any], value: Any, path: str, out: list[Rejection]) -> None:
    """Unknown fields, set uniqueness and CEL rules, recursively (children before the parent's rules)."""
    if isinstance(value, dict):
        props = schema.get("properties")
        if props is not None and not schema.get("x-kubernetes-preserve-unknown-fields"):
            for key in value:
                if key not in props:
                    out.append(Rejection(f"{path}.{key}", "field not declared in schema", "unknown-field"))
        for key, sub_value in value.items():
            sub = (props or {}).get(key) or (
                schema["additionalProperties"] if isinstance(schema.get("additionalProperties"), dict) else None
            )
            if sub is not None:
                _walk(sub, sub_value, f"{path}.{key}", out)
    if isinstance(value, list):
        if schema.get("x-kubernetes-list-type") == "set":
            seen: set[Any] = set()
            for item in value:
                if item in seen:
                    out.append(Rejection(path, f"Duplicate value: {item!r}", "set"))
                seen.add(item)
        for index, item in enumerate(value):
            if "items" in schema:
                _walk(schema["items"], item, f"{path}[{index}]", out)
    for rule in schema.get("x-kubernetes-validations", []):
        env = celpy.Environment()
        program = env.program(env.compile(rule["rule"]))
        try:
            ok = program.evaluate({"self": celpy.json_to_cel(value)})
        except Exception as exc:  # the API server reports an evaluation error as a rejection too
            out.append(Rejection(path + rule.get("fieldPath", ""), f"rule error: {exc}", "cel"))
            continue
        if (isinstance(ok, celpy.celtypes.BoolType) and not bool(ok)) or not isinstance(ok, celpy.celtypes.BoolType):
            out.append(Rejection(path + rule.get("fieldPath", ""), _message(rule, value), "cel"))


def _message(rule: dict[str, Any], value: Any) -> str:
    """`messageExpression` when the rule has one (what the API server prints), else `message`."""
    if "messageExpression" not in rule:
        return str(rule["message"])
    env = celpy.Environment()
    return str(env.program(env.compile(rule["messageExpression"])).evaluate({"self": celpy.json_to_cel(value)}))


def _schema_rejection(error: jsonschema.ValidationError) -> Rejection:
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "required":  # the API server names the missing field itself: "Required value"
        parts.append(str(error.message).split("'")[1])
    return Rejection("." + ".".join(parts), error.message, "schema")


def admit(manifest: dict[str, Any], crd: dict[str, Any] | None = None) -> list[Rejection]:
    """Everything the API server would refuse in `manifest`; empty when it would be stored."""
    schema = object_schema(crd or load_crd())
    obj = apply_defaults(schema, copy.deepcopy(manifest))
    out = [_schema_rejection(error) for error in jsonschema.Draft4Validator(schema).iter_errors(obj)]
    if out:  # the API server skips CEL on objects that fail the schema
        return out
    _walk(schema, obj, "", out)
    return out


def status_rejections(status: dict[str, Any], crd: dict[str, Any] | None = None) -> list[Rejection]:
    """What the API server would refuse or silently prune in a `/status` write: schema errors, and
    every field the status schema does not declare (pruned, so lost without a word)."""
    schema = object_schema(crd or load_crd())["properties"]["status"]
    out = [_schema_rejection(error) for error in jsonschema.Draft4Validator(schema).iter_errors(status)]
    _walk(schema, status, ".status", out)
    return out
