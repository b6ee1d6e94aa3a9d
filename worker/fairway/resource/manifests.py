"""Reading QueueSupervisor manifests and turning validation failures into field-named messages.

`validate_spec` is what the operator calls on every object and what `fairway validate` calls on
every document: one function, so `kubectl describe` and the CLI print the same words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from fairway.resource.spec import API_GROUP, API_VERSION, KIND, QueueSupervisorSpec, SpecRuleError
from fairway.resource.wording import field_names, plain_message, unknown_field_message

API_VERSION_FULL = f"{API_GROUP}/{API_VERSION}"


class ManifestError(Exception):
    """Input that is not a QueueSupervisor manifest at all (not YAML, wrong kind): exit code 2."""


@dataclass(frozen=True)
class Problem:
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass
class ValidationReport:
    name: str
    spec: QueueSupervisorSpec | None = None
    errors: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.errors


def _problem(error: ErrorDetails, prefix: str) -> list[Problem]:
    ctx = error.get("ctx") or {}
    cause = ctx.get("error")
    if isinstance(cause, SpecRuleError):
        return [Problem(v.field, v.message) for v in cause.violations]
    path = ".".join(str(part) for part in (prefix, *error["loc"]) if part != "")
    if error["type"] == "extra_forbidden":
        here = field_names(QueueSupervisorSpec, error["loc"][:-1])
        return [Problem(path, unknown_field_message(str(error["loc"][-1]), here))]
    message = plain_message(error)
    if error["type"] == "string_pattern_mismatch" and "A-Za-z0-9_.:-" in str(ctx.get("pattern", "")):
        message = (
            f"{error['input']!r} is not a valid queue name: start with a letter or digit, then use only "
            "letters, digits and _ . : - (at most 63 characters)"
        )
    elif error["type"] in ("literal_error", "enum") and error["input"] in (True, False):
        message += " (YAML reads false/off/no as booleans: write the word in quotes or use none)"
    return [Problem(path, message)]


def _as_json(value: Any) -> str:
    """The spec as the API server reads it: JSON (anything YAML made that JSON has not, a date, becomes
    a string, which the field's type then refuses)."""
    return json.dumps(value, default=str, allow_nan=False)


def validate_spec(spec: Mapping[str, Any] | None, name: str) -> ValidationReport:
    """The spec checked exactly as strictly as the CRD: types included (strict JSON mode: `"4"` is no
    integer and `true` no number, as the API server says), then every rule."""
    report = ValidationReport(name=name)
    try:
        text = _as_json(spec or {})
    except ValueError as exc:  # NaN or Infinity, which JSON (and so the API server) cannot carry
        report.errors.append(Problem("spec", f"not a JSON value: {exc}"))
        return report
    try:
        report.spec = QueueSupervisorSpec.model_validate_json(text, strict=True, context={"name": name})
    except ValidationError as exc:
        for error in exc.errors():
            report.errors.extend(_problem(error, "spec"))
        return report
    report.warnings = report.spec.warnings()
    return report


# What the API server accepts as a custom resource's name: a DNS-1123 subdomain.
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
MAX_NAME_LENGTH = 253


def is_supervisor(doc: Any) -> bool:
    """A QueueSupervisor (or meant to be one: the kind is ours, whatever the apiVersion says)."""
    return isinstance(doc, Mapping) and doc.get("kind") == KIND


def describe(doc: Any) -> str:
    """A document as a person would name it: 'ConfigMap settings', or what it is when not an object."""
    if not isinstance(doc, Mapping):
        return f"a {type(doc).__name__}, not a Kubernetes object"
    metadata = doc.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return " ".join(str(part) for part in (doc.get("kind") or "an object without a kind", name) if part)


def name_problem(name: str) -> Problem | None:
    if len(name) <= MAX_NAME_LENGTH and _NAME.fullmatch(name):
        return None
    suggestion = re.sub(r"[^a-z0-9.-]+", "-", name.lower()).strip("-.") or "my-supervisor"
    return Problem(
        "metadata.name",
        f"{name!r} is not a valid Kubernetes name (the API server refuses it): use lowercase letters, digits, "
        f"'-' and '.', starting and ending with a letter or digit, at most {MAX_NAME_LENGTH} characters "
        f"(for example {suggestion})",
    )


def validate_document(doc: Any) -> ValidationReport:
    """Validate one parsed QueueSupervisor document (see `is_supervisor`)."""
    if not isinstance(doc, Mapping) or doc.get("kind") != KIND:
        raise ManifestError(f"not a QueueSupervisor: {describe(doc)}")
    metadata = doc.get("metadata")
    name = str(metadata.get("name") or "") if isinstance(metadata, Mapping) else ""
    report = validate_spec(doc.get("spec") if isinstance(doc.get("spec"), Mapping) else None, name)
    if not name:
        report.errors.insert(0, Problem("metadata.name", "required field is missing; name the supervisor"))
    elif (problem := name_problem(name)) is not None:
        report.errors.insert(0, problem)
    if "spec" not in doc:
        report.errors.insert(0, Problem("spec", "required field is missing"))
    if doc.get("apiVersion") != API_VERSION_FULL:
        report.errors.insert(
            0, Problem("apiVersion", f"{doc.get('apiVersion')!r} is not this resource's: use {API_VERSION_FULL}")
        )
    return report


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML that refuses a key written twice in one mapping (plain YAML keeps the last, silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first on line {seen[key]}): YAML would keep only the last; remove one",
                    key_node.start_mark,
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load_documents(text: str) -> list[Any]:
    """Every YAML document in `text` (empty ones as None, so positions stay right); ManifestError
    when it is not YAML, with the line, the column and the marker kept on their own lines."""
    try:
        return list(yaml.load_all(text, Loader=_UniqueKeyLoader))
    except yaml.MarkedYAMLError as exc:
        raise ManifestError(_yaml_error(exc)) from exc
    except yaml.YAMLError as exc:
        raise ManifestError(f"not valid YAML: {exc}") from exc


def _yaml_error(exc: yaml.MarkedYAMLError) -> str:
    """'not valid YAML (line L, column C): <problem>', the line with a ^ under the spot, and where the
    unfinished construct began when that is elsewhere (an unclosed bracket, say)."""
    lines = []
    for mark, text in ((exc.problem_mark, exc.problem), (exc.context_mark, exc.context)):
        if mark is None or not text:
            continue
        snippet = mark.get_snippet()  # type: ignore[no-untyped-call]
        lines.append(f"line {mark.line + 1}, column {mark.column + 1}: {text}")
        if snippet and snippet.strip() != "^":
            lines.append(snippet)
    return "not valid YAML: " + "\n".join(lines) if lines else f"not valid YAML: {exc}"
