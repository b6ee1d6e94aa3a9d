"""The least RBAC the operator needs, in one place: the Helm chart renders exactly these rules.

Every API call in `kube.py` and everything kopf does (watching, posting Events, peering) is covered;
nothing else is granted, and every rule is used: the operator tests record each request and check both
(tests/integration/operator/conftest.py). Secrets are a rule of their own: the operator follows the Secret holding a
supervisor's Redis URL with a watch of that one Secret (a list and watch narrowed by the field selector
`metadata.name=<name>`, which is how a server authorizes them by name), and the chart grants that only
for the Secret names in its `redisSecrets.names` (RBAC `resourceNames`), never every Secret of a
namespace (fairway_operator.secret_watch).
"""

from __future__ import annotations

from typing import Any

from fairway.resource.spec import API_GROUP, PLURAL

RULES: list[dict[str, Any]] = [
    {"apiGroups": [API_GROUP], "resources": [PLURAL], "verbs": ["list", "watch"]},
    {"apiGroups": [API_GROUP], "resources": [f"{PLURAL}/status"], "verbs": ["patch"]},
    # Children: server-side apply (`patch`, and `create` when it creates), watched, pruned.
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list", "watch", "create", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch", "create", "patch", "delete"]},
    # A scale-down first sets each pool pod's deletion cost from its busy slots (fairway_operator.scaling).
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "patch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
]

# Narrowed by the chart with resourceNames (values: redisSecrets.names); left out when that list is empty.
SECRET_RULE: dict[str, Any] = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list", "watch"]}

# Only when the operator watches every namespace: kopf follows CRDs coming and going. (Watching named
# namespaces, the operator turns kopf's scanning off: a Role cannot grant cluster-scoped reads.)
CLUSTER_ONLY_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["list", "watch"]},
]

# Only with more than one replica (kopf's peering picks the active one): per watched namespace, or
# one cluster-wide peering object when every namespace is watched.
PEERING_RULES: dict[str, dict[str, Any]] = {
    "namespaced": {"apiGroups": ["kopf.dev"], "resources": ["kopfpeerings"], "verbs": ["list", "watch", "patch"]},
    "clusterwide": {
        "apiGroups": ["kopf.dev"],
        "resources": ["clusterkopfpeerings"],
        "verbs": ["list", "watch", "patch"],
    },
}


def every_rule() -> list[dict[str, Any]]:
    """All the rules any deployment shape may grant (for checks over every shape at once)."""
    return [*RULES, SECRET_RULE, *CLUSTER_ONLY_RULES, *PEERING_RULES.values()]


def rules_yaml() -> str:
    """The chart's copy (charts/fairway/files/rbac-rules.yaml); a test keeps it equal to this."""
    import yaml

    header = "# Generated from fairway_operator/rbac.py; a test fails when they differ.\n"
    rules = {
        "namespaced": RULES,
        "secrets": SECRET_RULE,
        "clusterOnly": CLUSTER_ONLY_RULES,
        "peering": PEERING_RULES,
    }
    return header + yaml.safe_dump(rules, sort_keys=False)
