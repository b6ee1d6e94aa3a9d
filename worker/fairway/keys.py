"""Every Redis key name Fairway uses, in one place (also documented in docs/protocol.md).

All keys of one queue share the hash tag `{<queue>}`, so every per-queue script is legal on Redis
Cluster. The few global keys (the active-queue index and the served-set registry) are only touched
on a standalone Redis, where slots do not exist.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

DEFAULT_PREFIX = "fairway"


@dataclass(frozen=True)
class QueueKeys:
    prefix: str
    queue: str

    @property
    def base(self) -> str:
        return f"{self.prefix}:{{{self.queue}}}:"

    def _key(self, suffix: str) -> str:
        return self.base + suffix

    @property
    def ready(self) -> str:
        """List of job documents, oldest first (RPUSH to add, LPOP to take)."""
        return self._key("ready")

    @property
    def reserved(self) -> str:
        """Sorted set: job document -> reservation deadline (ms since the epoch, Redis clock)."""
        return self._key("reserved")

    @property
    def delayed(self) -> str:
        """Sorted set: job document -> when it becomes ready (ms, Redis clock)."""
        return self._key("delayed")

    @property
    def notify(self) -> str:
        """List of wake-up tokens, one pushed per ready job; idle workers block on it."""
        return self._key("notify")

    @property
    def attempts(self) -> str:
        """Hash: sha1(job document) -> attempts started so far."""
        return self._key("attempts")

    @property
    def failed(self) -> str:
        """Hash: job id -> failure record (JSON)."""
        return self._key("failed")

    @property
    def failed_index(self) -> str:
        """Sorted set: job id -> when it failed (ms), for listing newest first."""
        return self._key("failed_index")

    @property
    def paused(self) -> str:
        """Exists while the queue is paused."""
        return self._key("paused")


@dataclass(frozen=True)
class GlobalKeys:
    prefix: str = DEFAULT_PREFIX

    @property
    def active(self) -> str:
        """Set of queues that may hold ready jobs (standalone only): makes the scan O(active)."""
        return f"{self.prefix}:active"

    @property
    def queues(self) -> str:
        """Set of every queue ever enqueued to or served, for `fairway queues`."""
        return f"{self.prefix}:queues"

    def served(self, queues: tuple[str, ...], weights: tuple[int, ...]) -> tuple[str, str]:
        """(set of served queues, hash queue -> weight or rank) registered by workers of one config."""
        digest = hashlib.sha1(repr((queues, weights)).encode()).hexdigest()[:16]
        return f"{self.prefix}:served:{digest}:queues", f"{self.prefix}:served:{digest}:weights"


@dataclass(frozen=True)
class TenantGroupKeys:
    """Keys of one tenant group: all share the hash tag `{tenants:<queuePrefix>}`, so one cluster slot.

    The price: a whole tenant group lives on one shard; outgrow it by splitting tenants across
    several groups (queue prefixes). See docs/tenants.md and scripts/tenant_lib.lua for the layout.
    """

    prefix: str
    queue_prefix: str

    @property
    def base(self) -> str:
        """G: the prefix the Lua scripts append their key names to."""
        return f"{self.prefix}:{{tenants:{self.queue_prefix}}}:"

    @property
    def name(self) -> str:
        """The group's name in the served and active sets; queue names cannot start with '@'."""
        return f"@{self.queue_prefix}"

    @property
    def ring(self) -> str:
        """Active healthy tenants, in turn order."""
        return self.base + "ring"

    @property
    def qring(self) -> str:
        """Active quarantined tenants (the slow lane)."""
        return self.base + "qring"

    @property
    def quarantined(self) -> str:
        """Set of quarantined tenant ids."""
        return self.base + "quarantined"

    @property
    def state(self) -> str:
        """Hash: ring head and jobs served in a row."""
        return self.base + "state"

    @property
    def reserved(self) -> str:
        """Sorted set: '<id>\\t<document>' -> reservation deadline (ms)."""
        return self.base + "reserved"

    @property
    def delayed(self) -> str:
        """Sorted set: '<id>\\t<document>' -> due time (ms)."""
        return self.base + "delayed"

    @property
    def notify(self) -> str:
        """Wake-up tokens, one per ready job."""
        return self.base + "notify"

    @property
    def attempts(self) -> str:
        """Hash: sha1(member) -> attempts started."""
        return self.base + "attempts"

    @property
    def inflight(self) -> str:
        """Hash: tenant id -> jobs reserved now."""
        return self.base + "inflight"

    @property
    def failed(self) -> str:
        """Hash: job id -> failure record."""
        return self.base + "failed"

    @property
    def failed_index(self) -> str:
        """Sorted set: job id -> failed at (ms)."""
        return self.base + "failed_index"

    @property
    def paused(self) -> str:
        """Exists while the group is paused."""
        return self.base + "paused"

    @property
    def seen(self) -> str:
        """Sorted set: tenant id -> last activity (ms)."""
        return self.base + "seen"

    def tenant(self, tenant_id: str) -> str:
        return f"{self.base}t:{tenant_id}"

    def stats(self, tenant_id: str, minute: int) -> str:
        return f"{self.base}stats:{tenant_id}:{minute}"

    def fails(self, tenant_id: str) -> str:
        return f"{self.base}fails:{tenant_id}"
