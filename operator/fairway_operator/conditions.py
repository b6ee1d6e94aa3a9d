"""Condition types and reasons (constants), and the one rule for changing a condition.

A condition's lastTransitionTime moves only when its status flips, so an unchanged pass produces an
identical status and no write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fairway.status import DEGRADED, PROGRESSING, READY, VALID

__all__ = ["DEGRADED", "PROGRESSING", "READY", "VALID"]

# Valid
SPEC_VALID = "SpecValid"
SPEC_INVALID = "SpecInvalid"
# Ready
POOLS_READY = "PoolsReady"
POOLS_NOT_READY = "PoolsNotReady"
# Progressing
ROLLING_OUT = "RollingOut"
STABLE = "Stable"
# Degraded
AS_EXPECTED = "AsExpected"
REDIS_UNREACHABLE = "RedisUnreachable"
API_ERROR = "KubernetesApiError"
# Ready/Progressing when the spec is invalid: the existing workers are left as they are.
WAITING_FOR_VALID_SPEC = "WaitingForValidSpec"


def set_condition(
    conditions: Sequence[dict[str, Any]],
    kind: str,
    status: bool,
    reason: str,
    message: str,
    generation: int | None,
    now: str,
) -> list[dict[str, Any]]:
    """`conditions` with `kind` set; lastTransitionTime kept unless the status flipped."""
    value = "True" if status else "False"
    previous = next((c for c in conditions if c.get("type") == kind), None)
    transition = previous["lastTransitionTime"] if previous and previous.get("status") == value else now
    updated = {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": message[:32000],
        "observedGeneration": generation,
        "lastTransitionTime": transition,
    }
    return [c for c in conditions if c.get("type") != kind] + [updated]


def condition(conditions: Sequence[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions if c.get("type") == kind), None)
