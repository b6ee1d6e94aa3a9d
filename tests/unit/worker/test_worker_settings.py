"""Worker settings are checked once, at the edge, with the field named."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from fairway.resource.worker_settings import WorkerSettings


def settings(**kw: object) -> WorkerSettings:
    return WorkerSettings.model_validate({"redis_url": "redis://r", "queues": ["a", "b"], **kw})


def test_defaults() -> None:
    s = settings()
    assert s.retry_after_ms == 4_000, "a lease renewed while the job runs: short, whatever the timeout"
    assert s.backoff_s == [] and s.unknown_handler_grace_s == 300


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"queues": []}, "serve at least one queue"),
        ({"queues": ["a", "a"]}, "listed twice"),
        ({"queues": ["a{b}"]}, "invalid queue name"),
        ({"weights": {"c": 2}}, "not served queues"),
        ({"block_for_s": 61}, "less than or equal to 60"),
        ({"unknown": 1}, "Extra inputs"),
    ],
)
def test_bad_settings_name_the_problem(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        settings(**changes)
