"""Cross-field rules of the `QueueSupervisor` spec, each written once for the API server and once for Python.

Each rule carries its CEL expression (placed in the CRD as an `x-kubernetes-validations` entry on the
object named by `scope`), the message both sides print, and a Python predicate over the validated
model. Keeping the two forms side by side in one table is what keeps their words and meaning equal;
the tests evaluate every CEL rule with cel-python against the same good and bad manifests as Python.

CEL cost: every list, map and string a rule touches is bounded in the schema (`maxItems`,
`maxProperties`, `maxLength`), so the API server's cost estimate stays within its budget.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fairway.resource.balance import shared_pool_cel

WEIGHTS_NEED_BALANCE_NONE = (
    "The [{name}queueWeights] option only applies when [balance] is none; each queue gets its own pool when "
    "balancing. Fix: drop queueWeights, or set balance: none to share one weighted pool."
)
TENANT_WEIGHT_NEEDS_BALANCE_NONE = (
    "The [{name}tenants.weight] option only applies when [balance] is none; "
    "the tenant group gets its own pool when balancing. Fix: drop tenants.weight, or set balance: none."
)


@dataclass(frozen=True)
class SpecRule:
    key: str
    scope: str  # the object the CEL rule is attached to: "spec" or "spec.redis"
    field: str  # the field a user should change, as a manifest path
    cel: str
    message: str  # may hold {name}: "" in the CRD, "<metadata.name>." in Python
    holds: Callable[[Any], bool]

    def text(self, name: str = "") -> str:
        return self.message.format(name=f"{name}." if name else "")

    @property
    def named(self) -> bool:
        """A message that names the object: CEL can read `metadata.name` only on the object's root."""
        return "{name}" in self.message

    def crd_entry(self) -> tuple[str, dict[str, str]]:
        """Where the rule sits in the CRD ("" for the root) and its `x-kubernetes-validations` entry.

        A named rule is placed on the root with `self` rebased onto the rule's scope and a
        `messageExpression` that splices in `metadata.name`, so the API server prints the same words
        as `fairway validate` ("[shop.queueWeights]"); `message` stays as the fallback.
        """
        if not self.named:
            return self.scope, {"rule": self.cel, "message": self.text(), **_field_path(self.field, self.scope)}
        rule = re.sub(r"\bself\.", f"self.{self.scope}.", self.cel)
        before, after = self.message.split("{name}")
        assert '"' not in self.message and "\\" not in self.message, "messageExpression quotes the message"
        expression = f'"{before}" + self.metadata.name + ".{after}"'
        entry = {"rule": rule, "message": self.text(), "messageExpression": expression}
        return "", {**entry, **_field_path(self.field, "")}


@dataclass(frozen=True)
class SpecRuleViolation:
    key: str
    field: str
    message: str


def _pools(spec: Any) -> int:
    return len(spec.queues) + (1 if spec.tenants is not None else 0)


_CREDENTIALS = re.compile(r"^[^/]*//[^/]*@")  # user:password@ in the authority
_QUERY_CREDENTIALS = re.compile(r"(?i)[?&](password|username|user)=")  # ?password=... (redis-py reads it)

RULES: tuple[SpecRule, ...] = (
    SpecRule(
        key="weights-need-balance-none",
        scope="spec",
        field="spec.queueWeights",
        cel=f"{shared_pool_cel()} || !has(self.queueWeights) || size(self.queueWeights) == 0",
        message=WEIGHTS_NEED_BALANCE_NONE,
        holds=lambda s: s.policy.shared_pool or not s.queue_weights,
    ),
    SpecRule(
        key="tenant-weight-needs-balance-none",
        scope="spec",
        field="spec.tenants.weight",
        cel=f"{shared_pool_cel()} || !has(self.tenants) || !has(self.tenants.weight)",
        message=TENANT_WEIGHT_NEEDS_BALANCE_NONE,
        holds=lambda s: s.policy.shared_pool or s.tenants is None or s.tenants.weight is None,
    ),
    SpecRule(
        key="needs-work",
        scope="spec",
        field="spec.queues",
        cel="(has(self.queues) && size(self.queues) > 0) || has(self.tenants)",
        message="A supervisor needs at least one queue in [queues] or a [tenants] block.",
        holds=lambda s: bool(s.queues) or s.tenants is not None,
    ),
    SpecRule(
        key="queues-unique",
        scope="spec",
        field="spec.queues",
        cel="!has(self.queues) || self.queues.all(q, self.queues.exists_one(x, x == q))",
        message="[queues] lists a queue more than once; list each queue once.",
        holds=lambda s: len(set(s.queues)) == len(s.queues),
    ),
    SpecRule(
        key="weights-name-known-queues",
        scope="spec",
        field="spec.queueWeights",
        cel="!has(self.queueWeights) || self.queueWeights.all(q, has(self.queues) && q in self.queues)",
        message="[queueWeights] names a queue that is not in [queues]; add it to queues or drop its weight.",
        holds=lambda s: set(s.queue_weights or {}) <= set(s.queues),
    ),
    SpecRule(
        key="paused-name-known-queues",
        scope="spec",
        field="spec.pausedQueues",
        cel="!has(self.pausedQueues) || self.pausedQueues.all(q, has(self.queues) && q in self.queues)",
        message="[pausedQueues] names a queue that is not in [queues]; add it to queues or unpause it.",
        holds=lambda s: set(s.paused_queues) <= set(s.queues),
    ),
    SpecRule(
        key="min-not-above-max",
        scope="spec",
        field="spec.minProcesses",
        cel="self.minProcesses <= self.maxProcesses",
        message="[minProcesses] must not exceed [maxProcesses]; lower minProcesses or raise maxProcesses.",
        holds=lambda s: s.min_processes <= s.max_processes,
    ),
    SpecRule(
        key="max-covers-pools",
        scope="spec",
        field="spec.maxProcesses",
        cel=(
            f"{shared_pool_cel()} || self.maxProcesses >= "
            "(has(self.queues) ? size(self.queues) : 0) + (has(self.tenants) ? 1 : 0)"
        ),
        message=(
            "[maxProcesses] must be at least the number of pools (one per queue, plus one for tenants) "
            "when balancing; raise maxProcesses or use balance: none."
        ),
        holds=lambda s: s.policy.shared_pool or s.max_processes >= _pools(s),
    ),
    SpecRule(
        key="tenant-prefix-distinct",
        scope="spec",
        field="spec.tenants.queuePrefix",
        cel=(
            "!has(self.tenants) || !has(self.queues) || !self.queues.exists(q, q.startsWith(self.tenants.queuePrefix))"
        ),
        message=(
            "a queue in [queues] starts with [tenants.queuePrefix] and would be taken for a tenant queue; "
            "rename the queue or change the prefix."
        ),
        holds=lambda s: s.tenants is None or not any(q.startswith(s.tenants.queue_prefix) for q in s.queues),
    ),
    SpecRule(
        key="tenant-overrides-unique",
        scope="spec",
        field="spec.tenants.overrides",
        cel=(
            "!has(self.tenants) || !has(self.tenants.overrides) || "
            "self.tenants.overrides.all(o, self.tenants.overrides.exists_one(p, p.tenant == o.tenant))"
        ),
        message="[tenants.overrides] names a tenant more than once; give each tenant one entry.",
        holds=lambda s: s.tenants is None or len({o.tenant for o in s.tenants.overrides}) == len(s.tenants.overrides),
    ),
    SpecRule(
        key="schedule-names-unique",
        scope="spec",
        field="spec.schedules",
        cel="!has(self.schedules) || self.schedules.all(s, self.schedules.exists_one(t, t.name == s.name))",
        message="[schedules] names a schedule more than once; give each schedule its own name.",
        holds=lambda s: len({x.name for x in s.schedules}) == len(s.schedules),
    ),
    SpecRule(
        key="schedule-queue-served",
        scope="spec",
        field="spec.schedules",
        cel=(
            "!has(self.schedules) || "
            "self.schedules.all(s, !has(s.queue) || (has(self.queues) && s.queue in self.queues))"
        ),
        message="A schedule's [queue] is not in [queues], so no worker of this supervisor would run its jobs; "
        "add the queue to queues or fix the name.",
        holds=lambda s: all(x.queue is None or x.queue in s.queues for x in s.schedules),
    ),
    SpecRule(
        key="schedule-tenant-needs-group",
        scope="spec",
        field="spec.schedules",
        cel="!has(self.schedules) || has(self.tenants) || self.schedules.all(s, !has(s.tenant))",
        message="A schedule names a [tenant] but the supervisor has no [tenants] block; add one or give the "
        "schedule a queue.",
        holds=lambda s: s.tenants is not None or all(x.tenant is None for x in s.schedules),
    ),
    SpecRule(
        key="redis-one-source",
        scope="spec.redis",
        field="spec.redis",
        cel="has(self.url) != has(self.secretRef)",
        message="[redis] needs exactly one of url or secretRef.",
        holds=lambda r: (r.url is None) != (r.secret_ref is None),
    ),
    SpecRule(
        key="redis-url-no-credentials",
        scope="spec.redis",
        field="spec.redis.url",
        cel=(
            "!has(self.url) || (!self.url.matches('^[^/]*//[^/]*@') && "
            "!self.url.matches('(?i)[?&](password|username|user)='))"
        ),
        message=(
            "[redis.url] must not contain credentials (user:password@ or ?password=); put the URL in a Secret "
            "and use redis.secretRef."
        ),
        holds=lambda r: r.url is None or not (_CREDENTIALS.match(r.url) or _QUERY_CREDENTIALS.search(r.url)),
    ),
)


def spec_violations(obj: Any, scope: str, name: str = "") -> list[SpecRuleViolation]:
    """The rules of `scope` that `obj` (a validated model at that scope) breaks."""
    return [
        SpecRuleViolation(rule.key, rule.field, rule.text(name))
        for rule in RULES
        if rule.scope == scope and not rule.holds(obj)
    ]


def crd_validations(where: str) -> list[dict[str, str]]:
    """The `x-kubernetes-validations` entries for the CRD object at `where` ("" is the root)."""
    return [entry for rule in RULES for at, entry in [rule.crd_entry()] if at == where]


def _field_path(field: str, scope: str) -> dict[str, str]:
    """fieldPath is relative to the object the rule sits on; kubectl shows it next to the message."""
    relative = f".{field}" if not scope else field.removeprefix(scope)
    return {"fieldPath": relative} if relative.startswith(".") else {}
