"""Fixtures for the operator tests: see support/kopf_kmock.py. Every operator test also checks that each
request the operator made during it (its own client's and kopf's, told apart by User-Agent) is granted
by the RBAC the chart renders (fairway_operator.rbac); the emulator enforces no RBAC, so this is how a
request the chart does not grant shows up here. What the operator requested across all of them is
kept, and the last test of the session checks that every rule the chart can grant was used
(test_rbac_by_record.py)."""

from collections.abc import Iterator

import pytest

from fairway_operator import rbac
from support.kopf_kmock import REQUESTS, k8s, operator  # noqa: F401
from support.rbac_check import RAN, USED, not_granted

LAST = "test_every_rule_the_chart_grants_is_used_by_some_operator_test"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The rule-use check runs after every other test (it reads what they recorded)."""
    items.sort(key=lambda item: item.name == LAST)


@pytest.fixture(autouse=True)
def only_granted_requests(request: pytest.FixtureRequest) -> Iterator[None]:
    start = len(REQUESTS)
    yield
    mine = [r for r in REQUESTS[start:] if r.by_operator]
    USED.update((r.verb, r.group, r.resource) for r in mine if r.resource)
    RAN.add(request.node.nodeid)
    denied = not_granted(rbac.every_rule(), mine, cluster_role=True)
    assert not denied, f"requests the chart's RBAC does not grant: {sorted(set(denied), key=str)[:10]}"
