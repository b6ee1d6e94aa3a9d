"""Has a child been changed by hand? (pure: desired object vs what the API server returned)

Only what the operator sets is compared (a subset check), so fields the API server defaults or other
controllers add never count as drift, and the events our own applies cause never trigger another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def is_subset(wanted: Any, actual: Any) -> bool:
    if isinstance(wanted, Mapping):
        return isinstance(actual, Mapping) and all(is_subset(v, actual.get(k)) for k, v in wanted.items())
    if isinstance(wanted, list):
        return (
            isinstance(actual, list)
            and len(wanted) == len(actual)
            and all(is_subset(w, a) for w, a in zip(wanted, actual, strict=True))
        )
    return bool(wanted == actual)


def drifted(wanted: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    """True when `actual` no longer carries what `wanted` sets (labels, data, spec)."""
    if not is_subset(wanted["metadata"].get("labels", {}), actual.get("metadata", {}).get("labels", {})):
        return True
    if wanted["kind"] == "ConfigMap":
        return wanted.get("data") != actual.get("data")
    return not is_subset(wanted["spec"], actual.get("spec", {}))
