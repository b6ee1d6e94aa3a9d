"""All Kubernetes API calls the operator makes (besides kopf's own watching): the official client's,
and on kopf's event loop, `NamedWatch`'s lists and watches of one named object (aiohttp, with the
official client's URL, headers, credentials, TLS and proxy).

Children are written with server-side apply under one field manager (`fairway`), forced, so the
operator owns exactly the fields it sets and never fights other controllers over the rest (an HPA's
or a human's annotations survive). The balancer changes only `spec.replicas`, with a merge patch.
Every verb used here is listed in `fairway_operator.rbac`, which the Helm chart renders.
"""

from __future__ import annotations

import contextlib
import json
import ssl
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any
from urllib.parse import quote

import aiohttp
import kubernetes
from kubernetes.client import ApiClient, ApiException, AppsV1Api, CoreV1Api, CustomObjectsApi

import fairway
from fairway.resource.spec import API_GROUP, API_VERSION, KIND, PLURAL
from fairway_operator.conditions import now_iso
from fairway_operator.desired import MANAGED_BY

FIELD_MANAGER = "fairway"
# How the operator's own requests name themselves (kopf's say kopf/<version>): an API server's audit log,
# and the tests' RBAC check, tell them from anyone else's.
USER_AGENT = f"fairway-operator/{fairway.__version__}"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
FORCED_APPLY = (("fieldManager", FIELD_MANAGER), ("force", "true"))
DEPLOYMENTS = "/apis/apps/v1/namespaces/{ns}/deployments/{name}"
CONFIG_MAPS = "/api/v1/namespaces/{ns}/configmaps/{name}"
PODS = "/api/v1/namespaces/{ns}/pods/{name}"
STATUS = f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{{ns}}/{PLURAL}/{{name}}/status"


class Kube:
    def __init__(self, api_client: ApiClient | None = None) -> None:
        client = api_client or operator_client()
        self.apps = AppsV1Api(client)
        self.core = CoreV1Api(client)
        self.custom = CustomObjectsApi(client)

    # -- children --------------------------------------------------------------------------------

    def apply(self, obj: dict[str, Any]) -> None:
        """Server-side apply: creates the object when missing (RBAC: `patch` and `create`), else
        sets exactly the fields this manager owns."""
        meta = obj["metadata"]
        path = {"Deployment": DEPLOYMENTS, "ConfigMap": CONFIG_MAPS}[obj["kind"]]
        self._patch(path.format(ns=meta["namespace"], name=meta["name"]), obj, APPLY, FORCED_APPLY)

    def _patch(
        self, path: str, body: dict[str, Any], content_type: str, query: tuple[tuple[str, str], ...] = ()
    ) -> None:
        """One PATCH whose answer is only checked, not turned into the client's models: the generated
        methods validate their arguments and build a model of every reply, which was the larger part
        of the operator's CPU when a thousand supervisors were created."""
        client = self.apps.api_client
        request = client.param_serialize(
            method="PATCH",
            resource_path=path,
            query_params=list(query),
            header_params={"Content-Type": content_type, "Accept": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
        )
        response = client.call_api(*request)
        response.read()
        if not 200 <= response.status <= 299:
            raise ApiException.from_response(http_resp=response, body=response.data.decode(errors="replace"), data=None)

    def children(self, namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
        """Every Deployment and ConfigMap labelled as the operator's, in these namespaces (all when
        empty): one list per kind (per namespace), for the start-up state of the watches."""
        wanted = {MANAGED_BY: "fairway"}
        found: list[dict[str, Any]] = []
        for kind, everywhere, per_namespace in (
            ("Deployment", self.apps.list_deployment_for_all_namespaces, self.apps.list_namespaced_deployment),
            ("ConfigMap", self.core.list_config_map_for_all_namespaces, self.core.list_namespaced_config_map),
        ):
            replies = [per_namespace(ns, label_selector=_selector(wanted), _preload_content=False) for ns in namespaces]
            replies = replies or [everywhere(label_selector=_selector(wanted), _preload_content=False)]
            found += [{**raw, "kind": kind} for reply in replies for raw in _labelled(reply, wanted)]
        return found

    def delete(self, kind: str, namespace: str, name: str) -> None:
        delete = {
            "Deployment": self.apps.delete_namespaced_deployment,
            "ConfigMap": self.core.delete_namespaced_config_map,
        }[kind]
        try:
            delete(name, namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def scale(self, namespace: str, name: str, replicas: int) -> None:
        """Change only spec.replicas (the balancer's one field)."""
        self._patch(DEPLOYMENTS.format(ns=namespace, name=name), {"spec": {"replicas": replicas}}, MERGE)

    def pods(self, namespace: str, match_labels: dict[str, str]) -> list[dict[str, Any]]:
        """A pool's pods (its Deployment's selector), as plain dicts."""
        reply = self.core.list_namespaced_pod(namespace, label_selector=_selector(match_labels), _preload_content=False)
        return _labelled(reply, match_labels)

    def annotate_pod(self, namespace: str, name: str, key: str, value: str) -> None:
        """One annotation on a pod (the deletion cost), with a merge patch."""
        patch = {"metadata": {"annotations": {key: value}}}
        self._patch(PODS.format(ns=namespace, name=name), patch, MERGE)

    # -- the supervisor --------------------------------------------------------------------------

    def event(self, body: Mapping[str, Any], reason: str, message: str) -> None:
        """A Normal core/v1 Event on the supervisor (what `kubectl describe` lists)."""
        meta = body["metadata"]
        now = now_iso()
        event: Any = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": f"{API_GROUP}/{API_VERSION}",
                "kind": KIND,
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta.get("uid"),
            },
            "reason": reason,
            "message": message[:1024],
            "type": "Normal",
            "source": {"component": "fairway-operator"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        self.core.create_namespaced_event(meta["namespace"], event)

    def patch_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        self._patch(STATUS.format(ns=namespace, name=name), {"status": status}, MERGE)


def _labelled(reply: Any, wanted: Mapping[str, str]) -> list[dict[str, Any]]:
    """A list reply's items as the server sent them (its JSON read as is: building the client's models
    of thousands of children, and plain dicts from those again, was most of a restart's listing), those
    carrying every wanted label (also when a server ignores the label selector)."""
    items: list[dict[str, Any]] = json.loads(reply.data).get("items") or []
    return [
        raw
        for raw in items
        if all(((raw.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in wanted.items())
    ]


def _selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in labels.items())


def load_config() -> None:
    """For `fairway operator`: in-cluster credentials when running in a pod, else the kubeconfig."""
    try:
        kubernetes.config.load_incluster_config()
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config()


def discover(api_client: ApiClient) -> None:
    """One discovery request for the QueueSupervisor API (raises as the client does). Discovery needs
    no RBAC rule: every authenticated user may read it."""
    CustomObjectsApi(api_client).get_api_resources(API_GROUP, API_VERSION, _request_timeout=10)


def dry_run_config_map(api_client: ApiClient, namespace: str) -> None:
    """A dry-run create of a ConfigMap in `namespace` (nothing is stored; raises as the client does): what
    `fairway operator` asks to learn that a namespace exists and its Role there is bound."""
    probe: Any = {"metadata": {"generateName": "fairway-startup-check-"}}
    CoreV1Api(api_client).create_namespaced_config_map(namespace, probe, dry_run="All", _request_timeout=10)


def operator_client() -> ApiClient:
    """The official client, from the loaded configuration, naming itself USER_AGENT."""
    client = ApiClient()
    client.user_agent = USER_AGENT
    return client


def api_host(api_client: ApiClient) -> str:
    return str(api_client.configuration.host)


def names_of(objs: Iterable[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(o["kind"], o["metadata"]["name"]) for o in objs}


class Refused(Exception):
    """The API server answered a stream's request with an error status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message)
        self.status, self.message = status, message


STREAM_ERRORS: tuple[type[BaseException], ...] = (aiohttp.ClientError, TimeoutError, ValueError)


class NamedWatch:
    """Lists and watches of one named object of a collection (field selector `metadata.name`, what RBAC
    `resourceNames` can grant), on an event loop; one aiohttp session, no limit on open watches."""

    def __init__(self, client: ApiClient) -> None:
        self._client = client
        self._session: aiohttp.ClientSession | None = None

    async def list_named(self, collection: str, name: str) -> dict[str, Any]:
        """The collection narrowed to `name`, as the API server's JSON list."""
        async with self._request(collection, name, {}, None) as response:
            body: dict[str, Any] = json.loads(await response.read())
            return body

    async def watch_named(
        self, collection: str, name: str, since: str, timeout_s: int
    ) -> AsyncIterator[dict[str, Any]]:
        """Watch events of `name` after resourceVersion `since`, until the server ends the watch."""
        query = {"watch": "true", "allowWatchBookmarks": "true", "timeoutSeconds": str(timeout_s)}
        if since:
            query["resourceVersion"] = since
        async with self._request(collection, name, query, timeout_s + 30) as response:
            pending = b""
            async for chunk in response.content.iter_any():  # (a line may be longer than aiohttp's line limit)
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    @contextlib.asynccontextmanager
    async def _request(
        self, collection: str, name: str, query: dict[str, str], read_timeout: float | None
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        url, options = request_for(self._client, collection, name, query)
        timeout = aiohttp.ClientTimeout(total=None, connect=30, sock_read=read_timeout or 60)
        if self._session is None:  # no limit on connections: each watch holds one open
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        async with self._session.get(url, timeout=timeout, **options) as response:
            if response.status != 200:
                raise Refused(response.status, (await response.text())[:300])
            yield response


def request_for(client: ApiClient, collection: str, name: str, query: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """A GET of a collection (`/api/v1/namespaces/{ns}/secrets`) narrowed to one name, as aiohttp takes it:
    the official client's URL, headers and credentials (its bearer token refreshed as the client refreshes
    it), TLS, proxy."""
    params = [("fieldSelector", f"metadata.name={name}"), *query.items()]
    _, url, headers, _, _ = client.param_serialize(
        method="GET",
        resource_path=_quoted(collection),
        query_params=params,
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    config = client.configuration
    options: dict[str, Any] = {"headers": headers, "ssl": _tls(config), "proxy": config.proxy or None}
    if getattr(config, "tls_server_name", None):
        options["server_hostname"] = config.tls_server_name
    return url, options


def _quoted(collection: str) -> str:
    """The collection's path with each segment quoted (a namespace is a DNS label; quoting is a guard)."""
    return "/".join(quote(part, safe="") for part in collection.split("/"))


_TLS: dict[tuple[Any, ...], ssl.SSLContext | bool] = {}


def _tls(config: Any) -> ssl.SSLContext | bool:
    """The client configuration's TLS settings as aiohttp takes them (True, aiohttp's default, for plain
    HTTP, where it does not apply)."""
    if not str(config.host).startswith("https"):
        return True
    key = (config.verify_ssl, config.ssl_ca_cert, config.cert_file, config.key_file, config.assert_hostname)
    if key not in _TLS:
        if not config.verify_ssl:
            _TLS[key] = False
        else:
            context = ssl.create_default_context(cafile=config.ssl_ca_cert)
            if config.cert_file:
                context.load_cert_chain(config.cert_file, config.key_file)
            if config.assert_hostname is False:
                context.check_hostname = False
            _TLS[key] = context
    return _TLS[key]
