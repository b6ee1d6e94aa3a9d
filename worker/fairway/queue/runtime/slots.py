"""A worker's job slots: how many it has, how many run, how many are free to reserve into, and how
many jobs it has done (what `maxJobs` counts). Read by the loop, the metrics and the heartbeat."""

from __future__ import annotations

from fairway.queue.protocol.job import now_ms
from fairway.queue.runtime.runner import Runner
from fairway.resource.worker_settings import WorkerSettings


class Slots:
    def __init__(self, settings: WorkerSettings, runner: Runner) -> None:
        self.settings = settings
        self.runner = runner
        self.jobs_done = 0

    @property
    def running(self) -> int:
        return self.runner.running

    @property
    def free(self) -> int:
        """Slots neither running a pooled job nor written off to a stuck one."""
        return self.settings.concurrency - self.runner.pooled - self.runner.stuck

    def wanted(self) -> int:
        """Jobs to reserve now: the free slots, never beyond max_jobs."""
        wanted = self.free
        if self.settings.max_jobs:
            wanted = min(wanted, self.settings.max_jobs - self.jobs_done - self.runner.pooled)
        return max(0, wanted)

    def used_up(self) -> bool:
        """`maxJobs` reached, counting the jobs still running."""
        limit = self.settings.max_jobs
        return bool(limit) and self.jobs_done + self.runner.pooled >= limit

    def beat(self) -> dict[str, object]:
        """What the heartbeat says of this process: dashboards' process counts, the operator's
        deletion costs (its busy slots)."""
        s = self.settings
        return {"served": s.served_names(), "concurrency": s.concurrency, "busy": self.running, "at": now_ms()}
