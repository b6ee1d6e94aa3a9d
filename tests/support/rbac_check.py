"""Whether RBAC rules grant a request, as the API server decides it (verbs x API groups x resources,
subresources named as `resource/subresource`, `resourceNames` narrowing by name), for the operator's
deployment shapes: every rule in one ClusterRole (it watches every namespace), or in a Role per
watched namespace (cluster-scoped requests are then not granted). Discovery (no resource) is granted
to every authenticated user by the server's own system:discovery role."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from support.kopf_kmock import Requested

# Kept across the operator tests of one session (tests/integration/operator/conftest.py fills them):
USED: set[tuple[str, str, str]] = set()  # (verb, API group, resource) the operator requested
RAN: set[str] = set()  # node ids of the operator tests that ran


def grants(rules: Iterable[dict[str, Any]], request: Requested, *, cluster_role: bool) -> bool:
    if not request.resource:
        return True  # discovery
    if request.namespace is None and not cluster_role:
        return False
    for rule in rules:
        if (
            request.group in rule["apiGroups"]
            and request.resource in rule["resources"]
            and request.verb in rule["verbs"]
            and (not rule.get("resourceNames") or request.name in rule["resourceNames"])
        ):
            return True
    return False


def not_granted(rules: list[dict[str, Any]], requests: Iterable[Requested], *, cluster_role: bool) -> list[Requested]:
    return [r for r in requests if r.by_operator and not grants(rules, r, cluster_role=cluster_role)]
