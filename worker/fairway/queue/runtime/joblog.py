"""One line per finished job, as text for people or JSON for log pipelines (the `fairway up` demo
and the tests read the JSON lines); with JSON, the worker's own log lines are JSON too, so a log
pipeline never meets a line it cannot parse."""

from __future__ import annotations

import datetime
import json
import logging
from dataclasses import dataclass
from typing import Literal, TextIO

from fairway.queue.protocol.calls import Reservation
from fairway.queue.protocol.context import job_running_here
from fairway.queue.protocol.job import Job

LogFormat = Literal["text", "json", "none"]
TEXT_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s%(job_tag)s"


def _iso(ms: int) -> str:
    """UTC, to the millisecond: text lines sort and line up with the JSON lines' *_at fields."""
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Finished:
    job: Job
    reservation: Reservation
    outcome: str
    started_ms: int
    finished_ms: int
    run_ms: float
    error: str | None
    reserve_seq: int = 0  # this process's count of jobs reserved when it took this one: the draw order

    @property
    def wait_ms(self) -> int:
        return max(0, self.started_ms - self.reservation.ready_since_ms(self.job))

    @property
    def queue(self) -> str:
        """Tenant jobs show their tenant queue (tenant-<id>), not the group's served name."""
        return self.job.queue if self.reservation.tenant else self.reservation.queue


class JobLog:
    def __init__(self, out: TextIO, fmt: LogFormat) -> None:
        self.out = out
        self.fmt = fmt

    def finished(self, f: Finished) -> None:
        if self.fmt == "none":
            return
        if self.fmt == "json":
            line = {
                "event": "job.finished",
                "id": f.job.id,
                "queue": f.queue,
                "tenant": f.reservation.tenant or f.job.tenant,
                "handler": f.job.handler,
                "attempt": f.reservation.attempts,
                "enqueued_at": f.job.enqueued_at,
                "started_at": f.started_ms,
                "finished_at": f.finished_ms,
                "wait_ms": f.wait_ms,
                "run_ms": round(f.run_ms, 3),
                "outcome": f.outcome,
                "reserve_seq": f.reserve_seq,
            }
            if f.reservation.lost:  # run again because a worker holding it vanished (not a spent try)
                line["redelivered"] = f.reservation.lost
            if f.error:
                line["error"] = f.error
            self.out.write(json.dumps(line) + "\n")
        else:
            tail = f" redelivered={f.reservation.lost}" if f.reservation.lost else ""
            tail += f" error={f.error!r}" if f.error else ""
            self.out.write(
                f"{_iso(f.finished_ms)} {f.outcome:<6} {f.queue} {f.job.handler} {f.job.id} "
                f"attempt={f.reservation.attempts} wait={f.wait_ms}ms run={f.run_ms:.1f}ms{tail}\n"
            )

    def malformed(self, served_name: str, tenant: str | None, job_id: str, attempt: int, reason: str) -> None:
        """A document that is not a job: it went to the failed store as MalformedJob."""
        if self.fmt == "none":
            return
        if self.fmt == "json":
            line = {
                "event": "job.malformed",
                "id": job_id,
                "queue": served_name,
                "tenant": tenant,
                "attempt": attempt,
                "outcome": "failed",
                "error": f"MalformedJob: {reason}",
            }
            self.out.write(json.dumps(line) + "\n")
        else:
            self.out.write(f"failed {served_name} - {job_id} attempt={attempt} error='MalformedJob: {reason}'\n")

    def flush(self) -> None:
        self.out.flush()


class JobFields(logging.Filter):
    """Log records written inside a handler carry its job (id, handler, queue, tenant), so one tenant's
    or one job's lines can be found: `record.job` (a dict, or None) and `record.job_tag` (text form)."""

    def filter(self, record: logging.LogRecord) -> bool:
        job = job_running_here()
        if job is None:
            record.job, record.job_tag = None, ""
            return True
        fields = {"id": job.id, "handler": job.handler, "queue": job.queue, "tenant": job.tenant}
        record.job = fields
        tenant = f" tenant={job.tenant}" if job.tenant else ""
        record.job_tag = f" [job={job.id} handler={job.handler} queue={job.queue}{tenant}]"
        return True


class JsonLogFormatter(logging.Formatter):
    """A log record as one JSON line: event "log", time (UTC ISO), level, logger, message, and the
    traceback as one string when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "event": "log",
            "time": _iso(int(record.created * 1000)),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        job = getattr(record, "job", None)
        if job is not None:
            line["job"] = job
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def configure_logging(fmt: LogFormat, level: int | str = logging.INFO) -> None:
    """The process's log lines (and Python's warnings) in the format of its job lines: JSON stays JSON."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLogFormatter() if fmt == "json" else logging.Formatter(TEXT_LOG_FORMAT))
    handler.addFilter(JobFields())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    logging.captureWarnings(True)
