"""The operator's peering identity never needs a passwd entry (the image's uid 10001 has none)."""

from __future__ import annotations

from fairway_operator.cli import operator_identity


def test_the_pod_name_from_the_downward_api_is_the_identity() -> None:
    assert operator_identity({"POD_ID": "fairway-7d9f-abcde"}, "host", 1, 0.0) == "fairway-7d9f-abcde"
    assert operator_identity({"POD_NAME": "fairway-x"}, "host", 1, 0.0) == "fairway-x"


def test_without_a_pod_name_host_pid_and_start_time_name_it() -> None:
    assert operator_identity({}, "laptop", 4242, 1_700_000_000.0) == "laptop/4242/20231114221320"
