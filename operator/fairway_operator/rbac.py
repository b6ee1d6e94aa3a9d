"""The least RBAC the operator needs, in one place: the Helm chart renders exactly these rules.

Every API call in `kube.py` and everything kopf does (watching, posting Events, peering) is covered;
nothing else is granted. Secrets are a rule of their own: the operator reads (`get` only) a
supervisor's Redis URL from one, and the chart grants that only for the Secret names in its
`redisSecrets.names` (RBAC `resourceNames`), never every Secret of a namespace.
"""

from __future__ import annotations

from typing import Any

from fairway.resource.spec import API_GROUP, PLURAL

RULES: list[dict[str, Any]] = [
    {"apiGroups": [API_GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch", "patch"]},
    {"apiGroups": [API_GROUP], "resources": [f"{PLURAL}/status"], "verbs": ["get", "patch"]},
    {
        "apiGroups": ["apps"],
        "resources": ["deployments"],
        "verbs": ["get", "list", "watch", "create", "patch", "delete"],
    },
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "create", "patch", "delete"]},
    # A scale-down first sets each pool pod's deletion cost from its busy slots (fairway_operator.scaling).
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "patch"]},
    {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
    {"apiGroups": ["kopf.dev"], "resources": ["kopfpeerings"], "verbs": ["get", "list", "watch", "patch"]},
]

# Narrowed by the chart with resourceNames (values: redisSecrets.names); left out when that list is empty.
SECRET_RULE: dict[str, Any] = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}

# Only needed when the operator watches every namespace (kopf discovers namespaces and cluster peering).
CLUSTER_ONLY_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list", "watch"]},
    {"apiGroups": ["kopf.dev"], "resources": ["clusterkopfpeerings"], "verbs": ["get", "list", "watch", "patch"]},
    {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["list", "watch"]},
]


def rules_yaml() -> str:
    """The chart's copy (charts/fairway/files/rbac-rules.yaml); a test keeps it equal to this."""
    import yaml

    header = "# Generated from fairway_operator/rbac.py; a test fails when they differ.\n"
    rules = {"namespaced": RULES, "secrets": SECRET_RULE, "clusterOnly": CLUSTER_ONLY_RULES}
    return header + yaml.safe_dump(rules, sort_keys=False)
