"""Reading QueueSupervisor manifests and turning validation failures into field-named messages.

`validate_spec` is what the operator calls on every object and what `fairway validate` calls on
every document: one function, so `kubectl describe` and the CLI print the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from fairway.resource.spec import API_GROUP, API_VERSION, KIND, QueueSupervisorSpec, SpecRuleError

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


_HINTS = {
    "extra_forbidden": "unknown field; fields are camelCase (for example queueWeights), check the spelling",
    "missing": "required field is missing",
}


def _problem(error: ErrorDetails, prefix: str) -> list[Problem]:
    ctx = error.get("ctx") or {}
    cause = ctx.get("error")
    if isinstance(cause, SpecRuleError):
        return [Problem(v.field, v.message) for v in cause.violations]
    path = ".".join(str(part) for part in (prefix, *error["loc"]) if part != "")
    message = _HINTS.get(error["type"], error["msg"])
    if error["type"] == "string_pattern_mismatch" and "A-Za-z0-9_.:-" in str(ctx.get("pattern", "")):
        message = (
            f"{error['input']!r} is not a valid queue name: start with a letter or digit, then use only "
            "letters, digits and _ . : - (at most 63 characters)"
        )
    elif error["type"] in ("literal_error", "enum") and error["input"] in (True, False):
        message += " (YAML reads false/off/no as booleans: write the word in quotes or use none)"
    return [Problem(path, message)]


def validate_spec(spec: Mapping[str, Any] | None, name: str) -> ValidationReport:
    report = ValidationReport(name=name)
    try:
        report.spec = QueueSupervisorSpec.model_validate(spec or {}, context={"name": name})
    except ValidationError as exc:
        for error in exc.errors():
            report.errors.extend(_problem(error, "spec"))
        return report
    report.warnings = report.spec.warnings()
    return report


def validate_document(doc: Any) -> ValidationReport:
    """Validate one parsed document; raise ManifestError when it is not a QueueSupervisor."""
    if not isinstance(doc, Mapping):
        raise ManifestError(f"expected a mapping (a Kubernetes object), got {type(doc).__name__}")
    if doc.get("apiVersion") != API_VERSION_FULL or doc.get("kind") != KIND:
        raise ManifestError(
            f"not a QueueSupervisor: apiVersion={doc.get('apiVersion')!r} kind={doc.get('kind')!r} "
            f"(expected apiVersion: {API_VERSION_FULL}, kind: {KIND})"
        )
    metadata = doc.get("metadata")
    name = str(metadata.get("name") or "") if isinstance(metadata, Mapping) else ""
    report = validate_spec(doc.get("spec") if isinstance(doc.get("spec"), Mapping) else None, name)
    if not name:
        report.errors.insert(0, Problem("metadata.name", "required field is missing; name the supervisor"))
    if "spec" not in doc:
        report.errors.insert(0, Problem("spec", "required field is missing"))
    return report


def load_documents(text: str) -> list[Any]:
    """Every non-empty YAML document in `text`; ManifestError when it is not YAML."""
    try:
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        raise ManifestError(f"not valid YAML: {exc}".replace("\n", " ")) from exc
