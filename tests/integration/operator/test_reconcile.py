"""The running operator (kopf) against the Kubernetes emulator over HTTP, with a real Redis."""

from __future__ import annotations

import asyncio
import itertools
import urllib.request
from typing import Any

import kubernetes
import pytest
import pytest_asyncio
import yaml
from prometheus_client.parser import text_string_to_metric_families

from fairway_operator.metrics import OperatorMetrics
from support.kopf_kmock import Emulator, eventually, running_operator, secret
from support.redis_procs import free_port

NS = "jobs"
pytestmark = pytest.mark.asyncio


def api() -> tuple[Any, Any, Any]:
    client = kubernetes.client.ApiClient()
    return (
        kubernetes.client.CustomObjectsApi(client),
        kubernetes.client.AppsV1Api(client),
        kubernetes.client.CoreV1Api(client),
    )


def supervisor(name: str = "shop", **spec: Any) -> dict[str, Any]:
    base = {"redis": {"secretRef": {"name": "redis", "key": "url"}}, "queues": ["high", "default", "low"]}
    return {
        "apiVersion": "fairway.dev/v1alpha1",
        "kind": "QueueSupervisor",
        "metadata": {"name": name, "namespace": NS},
        "spec": {**base, **spec},
    }


async def create(body: dict[str, Any]) -> dict[str, Any]:
    custom, _, _ = api()
    return await asyncio.to_thread(
        custom.create_namespaced_custom_object, "fairway.dev", "v1alpha1", NS, "queuesupervisors", body
    )


async def patch_spec(name: str, spec: dict[str, Any]) -> None:
    custom, _, _ = api()
    await asyncio.to_thread(
        custom.patch_namespaced_custom_object, "fairway.dev", "v1alpha1", NS, "queuesupervisors", name, {"spec": spec}
    )


async def get(name: str) -> dict[str, Any]:
    custom, _, _ = api()
    return await asyncio.to_thread(
        custom.get_namespaced_custom_object, "fairway.dev", "v1alpha1", NS, "queuesupervisors", name
    )


def children(k8s: Emulator, kind: str) -> dict[str, dict[str, Any]]:
    plural = {"Deployment": "deployments", "ConfigMap": "configmaps"}[kind]
    return {
        name: obj.raw
        for (res, ns, name), obj in list(k8s.objects.items())
        if res.plural == plural and ns == NS and not obj.deleted
    }


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == kind), None)


@pytest_asyncio.fixture
async def redis_secret(k8s: Emulator, redis_url: str) -> None:
    _, _, core = api()
    await asyncio.to_thread(core.create_namespaced_secret, NS, secret(NS, "redis", redis_url))


async def test_create_makes_deployments_and_configmaps(k8s: Emulator, operator: Any, redis_secret: None) -> None:
    await create(supervisor(balance="simple", maxProcesses=6, queueWeights=None))
    assert await eventually(lambda: len(children(k8s, "Deployment")) == 3)
    deployments = children(k8s, "Deployment")
    configmaps = children(k8s, "ConfigMap")
    assert set(deployments) == set(configmaps)
    for name, dep in deployments.items():
        assert dep["spec"]["replicas"] == 2
        cfg = yaml.safe_load(configmaps[name]["data"]["worker.yaml"])
        assert len(cfg["queues"]) == 1
        owner = dep["metadata"]["ownerReferences"][0]
        assert owner["kind"] == "QueueSupervisor" and owner["name"] == "shop"


def config_of(k8s: Emulator, name: str) -> dict[str, Any]:
    return yaml.safe_load(children(k8s, "ConfigMap")[name]["data"]["worker.yaml"])


def config_hash(k8s: Emulator, name: str) -> str:
    return children(k8s, "Deployment")[name]["spec"]["template"]["metadata"]["annotations"]["fairway.dev/config-hash"]


async def test_editing_weights_changes_the_configmap_and_the_pod_hash(
    k8s: Emulator, operator: Any, redis_secret: None
) -> None:
    await create(supervisor(queueWeights={"high": 3}))
    assert await eventually(lambda: "fairway-shop" in children(k8s, "Deployment"))
    before = config_hash(k8s, "fairway-shop")
    assert config_of(k8s, "fairway-shop")["weights"]["high"] == 3
    await patch_spec("shop", {"queueWeights": {"high": 5}})
    assert await eventually(lambda: config_of(k8s, "fairway-shop")["weights"]["high"] == 5)
    assert await eventually(lambda: config_hash(k8s, "fairway-shop") != before)


async def test_switching_none_to_simple_replaces_the_pools(k8s: Emulator, operator: Any, redis_secret: None) -> None:
    await create(supervisor())
    assert await eventually(lambda: set(children(k8s, "Deployment")) == {"fairway-shop"})
    await patch_spec("shop", {"balance": "simple", "maxProcesses": 3})
    assert await eventually(
        lambda: len(children(k8s, "Deployment")) == 3 and "fairway-shop" not in children(k8s, "Deployment")
    )
    assert await eventually(
        lambda: len(children(k8s, "ConfigMap")) == 3 and "fairway-shop" not in children(k8s, "ConfigMap")
    )
    await asyncio.sleep(1.0)  # periodic passes and child events settle: nothing brings the old pool back
    assert "fairway-shop" not in children(k8s, "Deployment") and len(children(k8s, "Deployment")) == 3


async def test_a_child_deleted_by_hand_comes_back(k8s: Emulator, operator: Any, redis_secret: None) -> None:
    await create(supervisor())
    assert await eventually(lambda: "fairway-shop" in children(k8s, "Deployment"))
    _, apps, _ = api()
    await asyncio.to_thread(apps.delete_namespaced_deployment, "fairway-shop", NS)
    assert "fairway-shop" not in children(k8s, "Deployment")
    assert await eventually(lambda: "fairway-shop" in children(k8s, "Deployment"))


async def test_a_child_edited_by_hand_is_put_back(k8s: Emulator, operator: Any, redis_secret: None) -> None:
    await create(supervisor())
    assert await eventually(lambda: "fairway-shop" in children(k8s, "Deployment"))
    _, apps, _ = api()
    dep = children(k8s, "Deployment")["fairway-shop"]
    tampered = {
        "spec": {
            "template": {
                "spec": {"containers": [{**dep["spec"]["template"]["spec"]["containers"][0], "image": "evil:latest"}]}
            }
        }
    }
    await asyncio.to_thread(apps.patch_namespaced_deployment, "fairway-shop", NS, tampered)

    def image() -> str:
        return str(children(k8s, "Deployment")["fairway-shop"]["spec"]["template"]["spec"]["containers"][0]["image"])

    assert await eventually(lambda: image() != "evil:latest")


async def test_an_invalid_spec_is_reported_and_leaves_the_workers_alone(
    k8s: Emulator, operator: Any, redis_secret: None
) -> None:
    await create(supervisor(queueWeights={"high": 3}))
    assert await eventually(lambda: "fairway-shop" in children(k8s, "Deployment"))
    before = children(k8s, "Deployment")["fairway-shop"]["metadata"]["resourceVersion"]
    # A cluster without CEL admits this; the operator must refuse it itself.
    await patch_spec("shop", {"balance": "auto"})

    async def invalid() -> dict[str, Any] | None:
        c = condition(await get("shop"), "Valid")
        return c if c and c["status"] == "False" else None

    valid = await eventually(invalid)
    assert valid, "Valid never turned False"
    assert valid["reason"] == "SpecInvalid"
    assert valid["message"] == (
        "spec.queueWeights: The [shop.queueWeights] option only applies when [balance] "
        "is none; each queue gets its own pool when balancing. Fix: drop queueWeights, or set balance: none to "
        "share one weighted pool."
    )
    assert children(k8s, "Deployment")["fairway-shop"]["metadata"]["resourceVersion"] == before
    assert set(children(k8s, "Deployment")) == {"fairway-shop"}

    def warned() -> bool:  # kopf posts Events from a background queue, after the status write
        events = [obj.raw for (res, _, _), obj in list(k8s.objects.items()) if res.plural == "events"]
        return any(e.get("type") == "Warning" and e.get("reason") == "SpecInvalid" for e in events)

    assert await eventually(warned)

    await patch_spec("shop", {"queueWeights": None})

    async def fixed() -> bool:
        c = condition(await get("shop"), "Valid")
        return bool(c and c["status"] == "True")

    assert await eventually(fixed)
    assert await eventually(lambda: len(children(k8s, "Deployment")) == 3)


async def test_status_shows_queue_depths_from_redis_and_pauses_reach_redis(
    k8s: Emulator, operator: Any, redis_secret: None, redis_url: str
) -> None:
    from fairway.queue.access.client import Client
    from fairway.queue.access.inspector import Inspector
    from fairway.queue.connection import connect

    Client(redis_url).enqueue_many("noop", [[]] * 7, queue="high")
    await create(supervisor(pausedQueues=["low"]))

    async def depths() -> dict[str, Any]:
        return {q["name"]: q for q in ((await get("shop")).get("status") or {}).get("queues", [])}

    assert await eventually(lambda: depths(), 10)
    rows = await depths()
    # processes: 1 at first; the balancer may already have grown the pool for the 7 waiting jobs
    assert rows["high"]["depth"] == 7 and rows["high"]["processes"] >= 1
    assert rows["low"]["paused"] is True
    assert Inspector(connect(redis_url)).stats(["low"])[0].paused, "pausedQueues pushed to Redis, no rollout"
    Client(redis_url).enqueue_many("noop", [[]] * 5, queue="high")

    async def twelve() -> bool:
        return (await depths())["high"]["depth"] == 12

    assert await eventually(twelve, 10), "the periodic pass refreshes depths"


async def test_the_resources_tenant_settings_reach_redis_and_run_time_ones_win(
    k8s: Emulator, operator: Any, redis_secret: None, redis_url: str
) -> None:
    from fairway.queue.access.client import Client
    from fairway.queue.access.tenant_settings import TenantSettingsStore
    from fairway.queue.connection import connect
    from fairway.resource.spec import TenantSettings

    store = TenantSettingsStore(connect(redis_url))
    store.set("tenant-", "acme", TenantSettings(max_in_flight=3))  # set by hand before the resource exists
    Client(redis_url).enqueue_many("noop", [[]] * 4, tenant="acme")
    tenants = {
        "queuePrefix": "tenant-",
        "defaults": {"rate": 50},
        "overrides": [{"tenant": "acme", "weight": 5, "maxInFlight": 20}],
    }
    await create(supervisor(balance="none", tenants=tenants))

    def written() -> bool:
        return store.show("tenant-", "acme").weight == 5

    assert await eventually(written, 15), "the operator wrote the resource's override into Redis"
    acme = store.show("tenant-", "acme")
    assert (acme.weight, acme.max_in_flight, acme.rate) == (5, 3, 50.0), "run-time cap wins, the rest falls through"
    assert acme.sources == {"weight": "override", "max_in_flight": "run-time", "rate": "defaults", "burst": "built-in"}
    assert store.show("tenant-", "other").rate == 50.0


async def test_ready_follows_the_deployments_at_once(k8s: Emulator, redis_secret: None) -> None:
    """Within a tick of the pods becoming available, not at the next status pass (10 s by default:
    here 30 s, so a Ready that waited for it would fail the 5 s below)."""
    async with running_operator(k8s, status_interval_s=30.0):
        await _ready_follows_the_deployments(k8s)


async def _ready_follows_the_deployments(k8s: Emulator) -> None:
    await create(supervisor(minProcesses=2))
    assert await eventually(lambda: "fairway-shop" in children(k8s, "Deployment"))

    async def ready_status() -> str | None:
        c = condition(await get("shop"), "Ready")
        return c["status"] if c else None

    assert await eventually(lambda: ready_status()) == "False"
    # The emulator runs no Deployment controller: play its part and report the pods available.
    _, apps, _ = api()
    await asyncio.to_thread(
        apps.patch_namespaced_deployment_status,
        "fairway-shop",
        NS,
        {"status": {"availableReplicas": 2, "readyReplicas": 2, "replicas": 2}},
    )

    async def is_ready() -> bool:
        return await ready_status() == "True"

    assert await eventually(is_ready, 5)
    progressing = condition(await get("shop"), "Progressing")
    assert progressing is not None and progressing["status"] == "False"


def degraded(name: str) -> Any:
    """For `eventually`: the supervisor's Degraded condition once it is True."""

    async def check() -> dict[str, Any] | None:
        c = condition(await get(name), "Degraded")
        return c if c and c["status"] == "True" else None

    return check


async def test_two_supervisors_serving_one_queue_on_one_redis_both_say_so(
    k8s: Emulator, operator: Any, redis_secret: None
) -> None:
    """(The two examples applied together once split `default`'s jobs between them with no word in
    either status.)"""
    await create(supervisor("shop", queues=["high", "default"]))
    await create(supervisor("mail", queues=["default", "mail"]))
    shop, mail = await eventually(degraded("shop")), await eventually(degraded("mail"))
    assert shop and shop["reason"] == "SharedQueue" and "default also served by " + NS + "/mail" in shop["message"]
    assert mail and mail["reason"] == "SharedQueue" and "default also served by " + NS + "/shop" in mail["message"]
    assert "high" not in shop["message"].split(":")[1], "only the queue they share is named"
    await patch_spec("mail", {"queues": ["mail"]})

    async def cleared() -> bool:
        c = condition(await get("shop"), "Degraded")
        return bool(c and c["status"] == "False")

    assert await eventually(cleared), "sharing nothing any more: no longer degraded"


async def test_unreachable_redis_is_degraded_not_a_crash(k8s: Emulator, operator: Any) -> None:
    _, _, core = api()
    await asyncio.to_thread(core.create_namespaced_secret, NS, secret(NS, "redis", "redis://127.0.0.1:1/0"))
    await create(supervisor())
    assert await eventually(lambda: "fairway-shop" in children(k8s, "Deployment")), "workers still deployed"
    found = await eventually(degraded("shop"))
    assert found and found["reason"] == "RedisUnreachable"
    ready = condition(await get("shop"), "Ready")
    assert ready and (ready["status"], ready["reason"]) == ("False", "RedisUnreachable"), "READY False at a glance"


@pytest.mark.parametrize("url", ["not a url", "http://user:hunter2@r:6379/0", "redis://r:notaport/0"])
async def test_a_bad_url_in_the_secret_is_reported_and_the_workers_are_still_deployed(
    k8s: Emulator, operator: Any, url: str
) -> None:
    _, _, core = api()
    await asyncio.to_thread(core.create_namespaced_secret, NS, secret(NS, "redis", url))
    await create(supervisor())
    assert await eventually(lambda: "fairway-shop" in children(k8s, "Deployment")), "workers still deployed"
    found = await eventually(degraded("shop"))
    assert found and "Secret 'redis'" in found["message"] and "redis://host:6379/0" in found["message"]
    assert "hunter2" not in str(await get("shop")), "the Secret's value is never copied into the status"


async def test_auto_balance_moves_replicas_toward_the_busy_queue(
    k8s: Emulator, operator: Any, redis_secret: None, redis_url: str
) -> None:
    from fairway.queue.access.client import Client

    Client(redis_url).enqueue_many("noop", [[]] * 900, queue="high")
    Client(redis_url).enqueue_many("noop", [[]] * 100, queue="low")
    await create(
        supervisor(
            balance="auto",
            queues=["high", "low"],
            minProcesses=1,
            maxProcesses=10,
            balanceMaxShift=1,
            balanceCooldown=1,
            autoScalingStrategy="size",
        )
    )
    seen: list[dict[str, int]] = []

    def replicas() -> dict[str, int]:
        pools = {
            d["metadata"]["annotations"]["fairway.dev/pool"]: d["spec"]["replicas"]
            for d in children(k8s, "Deployment").values()
        }
        if len(pools) == 2 and (not seen or seen[-1] != pools):
            seen.append(pools)
        return pools

    assert await eventually(lambda: replicas() == {"high": 1, "low": 1}, 5)
    # Both backlogs need more than maxProcesses: the 10 pods are split 900 : 100 (size strategy).
    assert await eventually(lambda: replicas() == {"high": 9, "low": 1}, 40), seen
    assert all(sum(r.values()) <= 10 for r in seen), seen
    for before, after in itertools.pairwise(seen):
        assert abs(after["high"] - before["high"]) <= 1, f"moved more than balanceMaxShift: {seen}"


async def test_no_finalizer_is_ever_set(k8s: Emulator, operator: Any, redis_secret: None) -> None:
    await create(supervisor(balance="auto", queues=["a", "b"]))
    assert await eventually(lambda: len(children(k8s, "Deployment")) == 2)
    await asyncio.sleep(1.5)  # a few balancing and refresh passes
    objects = [obj for (res, _, _), obj in list(k8s.objects.items()) if res.plural == "queuesupervisors"]
    versions = [v for obj in objects for v in obj.history if v is not None]
    assert len(versions) == 2, "created, then its status written once: the operator stores nothing else on it"
    for version in versions:
        assert not (version.raw.get("metadata") or {}).get("finalizers"), version.raw["metadata"]
        assert not (version.raw.get("metadata") or {}).get("annotations"), "no kopf bookkeeping on the object"
    custom, _, _ = api()
    await asyncio.to_thread(
        custom.delete_namespaced_custom_object, "fairway.dev", "v1alpha1", NS, "queuesupervisors", "shop"
    )
    with pytest.raises(kubernetes.client.ApiException):
        await get("shop")  # gone at once: nothing blocks deletion


async def test_operator_restart_makes_no_duplicates_and_keeps_status(k8s: Emulator, redis_secret: None) -> None:
    async with running_operator(k8s):
        await create(supervisor(balance="simple", maxProcesses=3))
        assert await eventually(lambda: len(children(k8s, "Deployment")) == 3)

        async def has_status() -> bool:
            return condition(await get("shop"), "Valid") is not None

        assert await eventually(has_status)
    status_before = (await get("shop"))["status"]
    names_before = set(children(k8s, "Deployment"))
    async with running_operator(k8s):
        await asyncio.sleep(2.0)  # resume handlers and a few periodic passes
        assert set(children(k8s, "Deployment")) == names_before
        assert len(children(k8s, "ConfigMap")) == 3
        status_after = (await get("shop"))["status"]
        valid_before = condition({"status": status_before}, "Valid")
        valid_after = condition({"status": status_after}, "Valid")
        assert valid_before and valid_after
        assert valid_after["lastTransitionTime"] == valid_before["lastTransitionTime"]


async def test_a_conflict_is_retried_from_the_watches_state(k8s: Emulator, redis_secret: None) -> None:
    """Every write is a server-side apply (forced, one field manager) or a merge patch without a
    resourceVersion, so the operator sends no precondition a real server could answer 409 to; a 409 (or
    any API error) still ends the pass, says so in the status, and the pass runs again later from what
    the watches hold then, never from the failed pass's copy."""
    k8s.refuse_next.append(("patch", "deployments", 409))
    async with running_operator(k8s, retry_delay_s=0.5):
        await create(supervisor(balance="simple", maxProcesses=3))
        assert await eventually(lambda: len(children(k8s, "Deployment")) == 3, 10)
        assert k8s.refuse_next == [], "the conflict was answered"

        async def healthy() -> bool:
            degraded = condition(await get("shop"), "Degraded")
            return degraded is None or degraded["status"] == "False"

        assert await eventually(healthy, 10)
    applies = [w for w in k8s.writes if w[2] == "deployments"]
    assert len({w[3] for w in applies}) == 3 and len(applies) <= 4, "each applied once, the refused one again"


# -- /metrics ---------------------------------------------------------------------------------------


def scrape(port: int) -> list[Any]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return [sample for family in text_string_to_metric_families(text) for sample in family.samples]


def pick(samples: list[Any], name: str, **labels: str) -> list[Any]:
    return [s for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]


async def test_the_operator_exports_queues_top_tenants_and_passes_on_metrics(
    k8s: Emulator, redis_secret: None, redis_url: str
) -> None:
    from fairway.queue.access.client import Client

    client = Client(redis_url)
    client.enqueue_many("noop", [[]] * 7, queue="high")
    for n in range(120):  # 120 tenants, a few with deep backlogs
        client.enqueue_many("noop", [[]] * (1 + (50 if n in (7, 42, 99) else 0)), tenant=f"t{n}")
    metrics, port = OperatorMetrics(), free_port()
    metrics.serve(port, addr="127.0.0.1")
    async with running_operator(k8s, metrics=metrics):
        await create(supervisor(pausedQueues=["low"], tenants={"queuePrefix": "tenant-", "metricsTopN": 5}))

        async def exported() -> list[Any] | None:
            samples = await asyncio.to_thread(scrape, port)
            return samples if pick(samples, "fairway_queue_ready_jobs", queue="high") else None

        samples = await eventually(exported, 15)
    assert samples
    who = {"namespace": "jobs", "supervisor": "shop"}
    assert pick(samples, "fairway_queue_ready_jobs", queue="high", **who)[0].value == 7
    assert pick(samples, "fairway_queue_paused", queue="low", **who)[0].value == 1
    assert pick(samples, "fairway_queue_processes", queue="high", **who)[0].value >= 1  # the balancer may grow it
    assert pick(samples, "fairway_tenants_active", **who)[0].value == 120
    assert pick(samples, "fairway_tenants_waiting_jobs", **who)[0].value == 120 + 150
    tenants = {s.labels["tenant"] for s in pick(samples, "fairway_tenant_waiting_jobs", **who)}
    assert {"t7", "t42", "t99"} <= tenants and len(tenants) <= 10, "top 5 by waiting and by p99 only"
    assert pick(samples, "fairway_tenant_waiting_jobs", tenant="t42", **who)[0].value == 51
    assert pick(samples, "fairway_reconcile_passes_total", kind="full")[0].value >= 1
    assert pick(samples, "fairway_reconcile_duration_seconds_count")[0].value >= 1
    names = {s.name for s in samples}
    assert all(n.startswith("fairway_") for n in names)
