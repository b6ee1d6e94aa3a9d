"""No default recycles a healthy worker: the memory limit is off unless set, the same for a plain
`fairway worker`, `fairway up` and the operator's pods (all read the spec's one default)."""

from __future__ import annotations

from fairway.plan.pools import pools
from fairway.plan.worker_config import worker_settings
from fairway.resource.spec import QueueSupervisorSpec
from fairway.resource.worker_settings import WorkerSettings


def test_the_memory_limit_is_off_everywhere_unless_set() -> None:
    spec = QueueSupervisorSpec.model_validate({"redis": {"url": "redis://r:6379/0"}, "queues": ["a", "b"]})
    assert spec.memory == 0
    assert WorkerSettings(queues=["a"]).memory_mib == 0  # fairway worker with no --memory
    for pool in pools(spec):  # what the operator renders and fairway up starts
        assert worker_settings(spec, pool).memory_mib == 0
    limited = spec.model_copy(update={"memory": 512})
    assert {worker_settings(limited, pool).memory_mib for pool in pools(limited)} == {512}
