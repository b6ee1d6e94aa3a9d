"""Condition reasons (constants), and the one rule for changing a condition.

A condition's lastTransitionTime moves only when its status flips, so an unchanged pass produces an
identical status and no write.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Literal

from fairway.resource.status import Condition, ConditionType

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
SECRET_FORBIDDEN = "SecretForbidden"  # the operator may not read the Secret naming Redis (RBAC)
SECRET_UNREADABLE = "SecretUnreadable"  # missing, or without the key
BAD_REDIS_URL = "BadRedisUrl"
SHARED_QUEUE = "SharedQueue"  # another supervisor serves one of its queues on the same Redis
API_ERROR = "KubernetesApiError"
# Ready/Progressing when the spec is invalid: the existing workers are left as they are.
WAITING_FOR_VALID_SPEC = "WaitingForValidSpec"
MESSAGE_MAX = 32000


def now_iso() -> str:
    """Now as Kubernetes writes times (RFC 3339, UTC, whole seconds): conditions' and Events' stamps."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(
    conditions: Sequence[Condition],
    kind: ConditionType,
    status: bool,
    reason: str,
    message: str,
    generation: int | None,
    now: str,
) -> list[Condition]:
    """`conditions` with `kind` set; lastTransitionTime kept unless the status flipped."""
    value: Literal["True", "False"] = "True" if status else "False"
    previous = next((c for c in conditions if c.type == kind), None)
    transition = previous.last_transition_time if previous and previous.status == value else now
    updated = Condition(
        type=kind,
        status=value,
        reason=reason,
        message=message[:MESSAGE_MAX],
        observed_generation=generation,
        last_transition_time=transition,
    )
    return [c for c in conditions if c.type != kind] + [updated]
