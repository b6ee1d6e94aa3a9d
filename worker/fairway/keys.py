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

    def _key(self, suffix: str) -> str:
        return f"{self.prefix}:{{{self.queue}}}:{suffix}"

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
