"""Job progress in Redis: written by a running handler (`current_job().progress`), read by producers.

One small key per job, next to its queue's (or tenant group's) other keys, expiring a day after the
last report: nothing has to clean it up when the job finishes, and a worker's hot path never touches it.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fairway.queue.connection import RedisClient
from fairway.queue.protocol.context import Progress
from fairway.queue.protocol.keys import family_keys

PROGRESS_TTL_S = 86_400
log = logging.getLogger("fairway.worker")


class ProgressBoard:
    def __init__(self, client: RedisClient, prefix: str) -> None:
        self.client = client
        self.prefix = prefix

    def report(self, served_name: str, job_id: str, progress: Progress) -> None:
        """What every job's context reports through (safe from any thread: the client has a pool)."""
        key = family_keys(self.prefix, served_name).progress(job_id)
        try:
            self.client.set(key, json.dumps(progress.to_json(), ensure_ascii=False), ex=PROGRESS_TTL_S)
        except Exception as exc:  # never into the handler: a progress report is not the job's work
            log.warning("job %s: progress not recorded (%s: %s)", job_id, type(exc).__name__, _short(exc))

    def read(self, served_name: str, job_id: str) -> dict[str, Any] | None:
        raw = self.client.get(family_keys(self.prefix, served_name).progress(job_id))
        return json.loads(raw) if raw is not None else None


def _short(exc: BaseException) -> str:
    try:
        return str(exc)[:200]
    except Exception:
        return "?"
