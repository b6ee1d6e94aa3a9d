"""A restart over 1,000 existing supervisors: the new operator process writes nothing (every child is
there and as rendered, every status current) and creates no duplicate child.

As in a cluster: the emulator runs in a process of its own (support.kmock_server), `fairway operator
--all-namespaces` runs as a subprocess with a kubeconfig, reaching the emulator through the recording
proxy, which logs each of its requests. What the emulator cannot show: a real server's garbage
collector and controllers (no pods, no ReplicaSets, no availableReplicas); bench/operator_scale.py runs
the same fleet against any API server with --kubeconfig.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import kubernetes

from fairway_operator import rbac
from fairway_operator.handlers import STATUS_INTERVAL_S
from support.operator_fleet import (
    Operator,
    api_server,
    create_secrets,
    create_supervisors,
    deployments_of,
    statuses_current,
    supervisor,
    wait_for,
    writes,
)
from support.rbac_check import not_granted
from support.recording_proxy import RecordingProxy

FLEET = 1000
PER_NAMESPACE = 10
LABEL = "app.kubernetes.io/managed-by=fairway"


def test_a_restart_over_1000_supervisors_writes_nothing_and_duplicates_nothing(redis_url: str) -> None:
    bodies = [supervisor(i, PER_NAMESPACE) for i in range(FLEET)]
    expected = sum(deployments_of(b) for b in bodies)
    namespaces = sorted({b["metadata"]["namespace"] for b in bodies})
    with api_server(None) as upstream, RecordingProxy(upstream) as proxy:
        client = kubernetes.client.ApiClient(upstream)
        core, apps = kubernetes.client.CoreV1Api(client), kubernetes.client.AppsV1Api(client)
        custom = kubernetes.client.CustomObjectsApi(client)

        def children() -> list[tuple[str, str, str]]:
            found = apps.list_deployment_for_all_namespaces(label_selector=LABEL).items
            found += core.list_config_map_for_all_namespaces(label_selector=LABEL).items
            return sorted((o.metadata.namespace, o.metadata.name, o.metadata.resource_version) for o in found)

        create_secrets(core, namespaces, redis_url)
        create_supervisors(custom, bodies)
        operator = Operator(proxy.url, Path(tempfile.mkdtemp(prefix="fairway-restart-")))
        operator.start()
        try:
            wait_for(lambda: len(children()) >= 2 * expected, 600, "every child", 2.0)
            wait_for(lambda: statuses_current(custom) == FLEET, 300, "every status", 2.0)
        finally:
            operator.stop()
        before = children()
        assert len(before) == 2 * expected, "a Deployment and a ConfigMap per pool"

        restarted = time.monotonic()
        operator.start()
        try:
            wait_for(lambda: (operator.full_passes() or 0) >= FLEET, 300, "every supervisor seen again")
            time.sleep(STATUS_INTERVAL_S + 2)  # a status pass over every one of them, too
        finally:
            operator.stop()
        after = children()
    assert writes(proxy.log, restarted, time.monotonic()) == 0, "nothing changed, so nothing was written"
    assert after == before, "the same children, none created, none changed (same resourceVersions)"
    mine = [e.request for e in proxy.log if e.request.by_operator]
    assert not_granted(rbac.every_rule(), mine, cluster_role=True) == []
