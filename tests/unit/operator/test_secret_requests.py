"""The Secret watch's requests carry what the official client would send: the field selector that lets
RBAC resourceNames grant them, the bearer token, the cluster's CA or client certificate."""

from __future__ import annotations

import ssl
from typing import Any
from urllib.parse import parse_qs, urlsplit

import kubernetes

from fairway_operator.secret_watch import request_for

SYSTEM_CAS = "/etc/ssl/certs/ca-certificates.crt"


def header(options: dict[str, Any], name: str) -> str | None:
    return {k.lower(): v for k, v in options["headers"].items()}.get(name.lower())


def client(**settings: object) -> kubernetes.client.ApiClient:
    config = kubernetes.client.Configuration(host=str(settings.pop("host", "https://k8s.example:6443")))
    for key, value in settings.items():
        setattr(config, key, value)
    return kubernetes.client.ApiClient(config)


def test_the_request_names_its_secret_with_a_field_selector_and_carries_the_token() -> None:
    api = client(api_key={"authorization": "Bearer s3cret"}, ssl_ca_cert=SYSTEM_CAS)
    api.user_agent = "fairway-operator/test"
    url, options = request_for(api, "team-a", "redis", {"watch": "true", "resourceVersion": "42"})
    parts = urlsplit(url)
    assert parts.path == "/api/v1/namespaces/team-a/secrets"
    assert parse_qs(parts.query) == {
        "fieldSelector": ["metadata.name=redis"],
        "watch": ["true"],
        "resourceVersion": ["42"],
    }
    assert header(options, "Authorization") == "Bearer s3cret"
    assert header(options, "User-Agent") == "fairway-operator/test"
    assert isinstance(options["ssl"], ssl.SSLContext) and options["ssl"].verify_mode == ssl.CERT_REQUIRED


def test_a_token_the_client_refreshes_is_refreshed_for_each_request() -> None:
    tokens = iter(["Bearer one", "Bearer two"])
    api = client(api_key={"authorization": "Bearer zero"})  # (as in-cluster: read once, then refreshed)

    def refresh(config: kubernetes.client.Configuration) -> None:
        config.api_key = {"authorization": next(tokens)}

    api.configuration.refresh_api_key_hook = refresh
    first = header(request_for(api, "ns", "redis", {})[1], "Authorization")
    second = header(request_for(api, "ns", "redis", {})[1], "Authorization")
    assert (first, second) == ("Bearer one", "Bearer two")


def test_tls_follows_the_client_configuration() -> None:
    assert request_for(client(verify_ssl=False), "ns", "s", {})[1]["ssl"] is False
    plain = request_for(client(host="http://127.0.0.1:8001"), "ns", "s", {})[1]
    assert plain["ssl"] is True and header(plain, "Authorization") is None, "(aiohttp's default; no TLS)"
    named = request_for(client(tls_server_name="kubernetes.default", ssl_ca_cert=SYSTEM_CAS), "ns", "s", {})[1]
    assert named["server_hostname"] == "kubernetes.default"
