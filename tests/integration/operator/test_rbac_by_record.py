"""The operator's requests against the RBAC the chart renders, by record: the emulator logs every
request with its User-Agent (the operator's client says fairway-operator/<version>, kopf says kopf/...),
and conftest.py checks after every operator test that each of the operator's requests is granted.
This module shows that the check sees the operator's requests and fails when a rule they need is
taken away; runs the operator in the chart's other shapes (named namespaces with a Role each, and
kopf's peering with more than one replica); and, last of all operator tests, checks that every rule
the chart can grant was used by some test, so an unused rule added to rbac.py fails too."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import kubernetes
import pytest
from test_reconcile import NS, api, children, create, degraded, redis_secret, supervisor  # noqa: F401

from fairway_operator import rbac
from support.kopf_kmock import REQUESTS, Emulator, eventually, running_operator
from support.rbac_check import RAN, USED, not_granted
from support.recording_proxy import RecordingProxy


@pytest.mark.asyncio
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
        ("list", "", "secrets"),
        ("watch", "", "secrets"),
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
    # As the chart grants Secrets, by name: every Secret request names its Secret (a field selector).
    by_name = [*rbac.RULES, {**rbac.SECRET_RULE, "resourceNames": ["redis"]}, *rbac.CLUSTER_ONLY_RULES]
    assert not_granted(by_name, mine, cluster_role=True) == []


def peering_object(kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name} | ({"namespace": namespace} if namespace else {})
    return {"apiVersion": "kopf.dev/v1", "kind": kind, "metadata": meta}


@pytest.mark.asyncio
@pytest.mark.usefixtures("redis_secret")
async def test_watching_named_namespaces_with_peering_needs_only_the_roles_rules(k8s: Emulator) -> None:
    """The chart's `watchNamespaces` with two replicas: a Role per namespace (namespaced rules, the named
    Secret, kopfpeerings). kopf's namespace and CRD scanning is off (a Role cannot grant it)."""
    custom, _, _ = api()
    body = peering_object("KopfPeering", "fairway", NS)
    await asyncio.to_thread(custom.create_namespaced_custom_object, "kopf.dev", "v1", NS, "kopfpeerings", body)
    start = len(REQUESTS)
    async with running_operator(k8s, namespaces=(NS,), peering="fairway"):
        await create(supervisor(balance="simple", maxProcesses=6, queueWeights=None))
        assert await eventually(lambda: len(children(k8s, "Deployment")) == 3, 20)
    mine = [r for r in REQUESTS[start:] if r.by_operator]
    role = [*rbac.RULES, {**rbac.SECRET_RULE, "resourceNames": ["redis"]}, rbac.PEERING_RULES["namespaced"]]
    assert not_granted(role, mine, cluster_role=False) == []
    used = {(r.verb, r.resource) for r in mine}
    assert {("list", "kopfpeerings"), ("watch", "kopfpeerings"), ("patch", "kopfpeerings")} <= used, used
    assert not {r.resource for r in mine} & {"namespaces", "customresourcedefinitions", "clusterkopfpeerings"}


@pytest.mark.asyncio
@pytest.mark.usefixtures("redis_secret")
async def test_watching_every_namespace_with_peering_uses_the_cluster_peering(k8s: Emulator) -> None:
    custom, _, _ = api()
    body = peering_object("ClusterKopfPeering", "fairway")
    await asyncio.to_thread(custom.create_cluster_custom_object, "kopf.dev", "v1", "clusterkopfpeerings", body)
    start = len(REQUESTS)
    async with running_operator(k8s, peering="fairway"):
        await create(supervisor(balance="none"))
        assert await eventually(lambda: len(children(k8s, "Deployment")) == 1, 20)
    mine = [r for r in REQUESTS[start:] if r.by_operator]
    cluster_role = [*rbac.RULES, rbac.SECRET_RULE, *rbac.CLUSTER_ONLY_RULES, rbac.PEERING_RULES["clusterwide"]]
    assert not_granted(cluster_role, mine, cluster_role=True) == []
    used = {(r.verb, r.resource) for r in mine}
    assert {("watch", "clusterkopfpeerings"), ("patch", "clusterkopfpeerings")} <= used, used
    assert ("watch", "customresourcedefinitions") in used, "kopf follows CRDs when it watches every namespace"


def test_every_rule_the_chart_grants_is_used_by_some_operator_test(request: pytest.FixtureRequest) -> None:
    """Runs last (conftest.py): every verb of every rule rbac.py holds (the chart renders exactly
    those) was requested by the operator in some test of this session. A rule nothing uses fails here."""
    others = {i.nodeid for i in request.session.items if i.nodeid != request.node.nodeid and "operator" in i.nodeid}
    operator_tests = {n for n in others if "/integration/operator/" in n}
    if not operator_tests <= RAN:
        pytest.skip("needs the whole operator suite in one session (it checks what all of them requested)")
    unused = [
        (verb, group, resource)
        for rule in rbac.every_rule()
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
        if (verb, group, resource) not in USED
    ]
    assert unused == [], f"rules no operator test used (drop them from rbac.py, or test what needs them): {unused}"


@pytest.mark.asyncio
@pytest.mark.usefixtures("redis_secret")
async def test_a_secret_the_chart_does_not_grant_is_never_requested(k8s: Emulator) -> None:
    """The chart grants `list` and `watch` on the Secrets in redisSecrets.names only, and tells the operator those
    names (--redis-secrets): a supervisor naming another one is told what to do, and that Secret is
    never asked for (a real API server would refuse it)."""
    start = len(REQUESTS)
    async with running_operator(k8s, redis_secrets=frozenset({"redis"})):
        await create(supervisor("elsewhere", redis={"secretRef": {"name": "team-redis", "key": "url"}}))
        await create(supervisor("shop"))
        found = await eventually(degraded("elsewhere"), 10)
        assert found and "redisSecrets.names" in found["message"] and "'team-redis'" in found["message"], found
        assert found["reason"] == "SecretForbidden", "a Secret the operator may not read is not an unreachable Redis"
        assert await eventually(lambda: len(children(k8s, "Deployment")) == 2, 10), "children still applied"
    asked = {r.name for r in REQUESTS[start:] if r.by_operator and r.resource == "secrets"}
    assert asked == {"redis"}, asked


@pytest.mark.asyncio
@pytest.mark.usefixtures("redis_secret")
async def test_the_recording_proxy_logs_requests_as_the_emulator_does(k8s: Emulator) -> None:
    """bench/operator_scale.py counts the operator's requests with the recording proxy (it works in front
    of any API server); here both logs of one run agree (but for the `create` the emulator adds for an
    apply that creates, which on the wire is the one patch)."""
    upstream = kubernetes.client.Configuration(host=str(k8s.url).rstrip("/"))
    with RecordingProxy(upstream) as proxy:
        start = len(REQUESTS)
        # the operator's own client (kopf's too, through running_operator) goes through the proxy
        kubernetes.client.Configuration.set_default(kubernetes.client.Configuration(host=proxy.url))
        async with running_operator(proxy.url):
            await create(supervisor(balance="simple", maxProcesses=6, queueWeights=None))
            assert await eventually(lambda: len(children(k8s, "Deployment")) == 3)
            await asyncio.sleep(1.5)
        counted = lambda r: r.by_operator and r.resource and r.verb != "create"  # noqa: E731  (discovery aside)
        emulator_log = Counter(r for r in REQUESTS[start:] if counted(r))
        proxy_log = Counter(e.request for e in proxy.log if counted(e.request))
    assert proxy_log == emulator_log
    assert sum(emulator_log.values()) > 10
