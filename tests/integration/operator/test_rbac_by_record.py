"""The operator's requests against the RBAC the chart renders, by record: the emulator logs every
request with its User-Agent (the operator's client says fairway-operator/<version>, kopf says kopf/...),
and conftest.py checks after every operator test that each of the operator's requests is granted.
This module shows that the check sees the operator's requests and fails when a rule they need is
taken away.

Not yet shown here (#27): that every rule is used by some test. kopf's peering (kopfpeerings), its
namespace and CRD watching when namespaces come and go, and the pods `get` are not exercised by
these tests, so an unused-rule check would fail on them today."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from test_reconcile import children, create, redis_secret, supervisor  # noqa: F401

from fairway_operator import rbac
from support.kopf_kmock import REQUESTS, Emulator, eventually
from support.rbac_check import not_granted

pytestmark = pytest.mark.asyncio


@pytest.mark.usefixtures("redis_secret")
async def test_the_operators_requests_are_recorded_and_each_rule_they_use_is_needed(
    k8s: Emulator, operator: Any
) -> None:
    start = len(REQUESTS)
    await create(supervisor(balance="simple", maxProcesses=6, queueWeights=None))
    assert await eventually(lambda: len(children(k8s, "Deployment")) == 3)
    await asyncio.sleep(1.5)  # a status pass
    mine = [r for r in REQUESTS[start:] if r.by_operator]
    agents = {r.agent.split("/")[0] for r in mine}
    assert agents == {"fairway-operator", "kopf"}, agents
    rules = [*rbac.RULES, rbac.SECRET_RULE, *rbac.CLUSTER_ONLY_RULES]
    assert not_granted(rules, mine, cluster_role=True) == []
    used = {(r.verb, r.group, r.resource) for r in mine if r.resource}
    for needed in [
        ("create", "apps", "deployments"),
        ("create", "", "configmaps"),
        ("get", "", "secrets"),
        ("patch", "fairway.dev", "queuesupervisors/status"),
        ("watch", "fairway.dev", "queuesupervisors"),
    ]:
        assert needed in used, (needed, sorted(used))
    for verb, group, resource in used:
        narrowed = [
            {**rule, "verbs": [v for v in rule["verbs"] if v != verb]}
            if group in rule["apiGroups"] and resource in rule["resources"]
            else rule
            for rule in rules
        ]
        assert not_granted(narrowed, mine, cluster_role=True), f"without {verb} {group}/{resource} nothing failed"
    assert not_granted(rules, mine, cluster_role=False), "cluster-wide watches need the ClusterRole"
