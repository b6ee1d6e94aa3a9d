"""Fixtures for the operator tests: see support/kopf_kmock.py. Every operator test also checks that each
request the operator made during it (its own client's and kopf's, told apart by User-Agent) is granted
by the RBAC the chart renders (fairway_operator.rbac: the operator watches every namespace in these
tests, so all rules sit in one ClusterRole). The emulator enforces no RBAC: this is how a request the
chart does not grant shows up here."""

from collections.abc import Iterator

import pytest

from fairway_operator import rbac
from support.kopf_kmock import REQUESTS, k8s, operator  # noqa: F401
from support.rbac_check import not_granted


@pytest.fixture(autouse=True)
def only_granted_requests() -> Iterator[None]:
    start = len(REQUESTS)
    yield
    rules = [*rbac.RULES, rbac.SECRET_RULE, *rbac.CLUSTER_ONLY_RULES]
    denied = not_granted(rules, REQUESTS[start:], cluster_role=True)
    assert not denied, f"requests the chart's RBAC does not grant: {sorted(set(denied), key=str)[:10]}"
