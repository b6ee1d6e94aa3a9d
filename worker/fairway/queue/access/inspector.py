"""Reading Fairway's state from Redis for people and the balancer: queue figures, tenant figures,
failure records, average runtimes. Pipelined reads and one read-only script; nothing here changes a job."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fairway.queue.access.figures import (
    TENANT_WINDOW_S,
    FailedJob,
    QueueStats,
    TenantFigures,
    add_minute,
    quantile_ms,
)
from fairway.queue.access.tenant_settings import decode as decode_settings
from fairway.queue.access.tenant_settings import effective
from fairway.queue.connection import RedisClient
from fairway.queue.protocol import calls
from fairway.queue.protocol.job import Job, JobError, decode, now_ms
from fairway.queue.protocol.keys import (
    DEFAULT_PREFIX,
    READY_FIELD,
    GlobalKeys,
    QueueKeys,
    TenantGroupKeys,
    family_keys,
    is_group_name,
)
from fairway.queue.protocol.scripts import Scripts
from fairway.resource.spec import TenantSettings

TENANTS_FORGOTTEN_AFTER_MS = 3_600_000  # a tenant quiet for an hour leaves the tenant list
_PAGE = 500  # failure records read per round trip
WORKER_STALE_MS = 15_000  # a worker beats every second; one silent this long is gone


def tenant_controls(
    run_time: Mapping[bytes, bytes],
    configured: Mapping[bytes, bytes],
    limited: Mapping[bytes, bytes],
    why: Mapping[bytes, bytes],
) -> Callable[[str], dict[str, Any]]:
    """From a group's settings and skip counters (read whole, once): each tenant's TenantFigures
    fields for its weight, cap, rate, skips and quarantine reason."""
    run = {k.decode(): decode_settings(v) for k, v in run_time.items()}
    conf = {k.decode(): decode_settings(v) for k, v in configured.items()}
    defaults = conf.pop("*", TenantSettings())
    skips = {k.decode(): int(v) for k, v in limited.items()}
    reasons = {k.decode(): v.decode() for k, v in why.items()}

    def of(tenant: str) -> dict[str, Any]:
        values, _ = effective(run.get(tenant, TenantSettings()), conf.get(tenant, TenantSettings()), defaults)
        return {
            "weight": values["weight"],
            "max_in_flight": values["max_in_flight"],
            "rate": values["rate"],
            "capped": skips.get(f"{tenant}\tcapped", 0),
            "throttled": skips.get(f"{tenant}\tthrottled", 0),
            "quarantine_reason": reasons.get(tenant),
        }

    return of


class Inspector:
    def __init__(self, client: RedisClient, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self.prefix = prefix
        self.globals = GlobalKeys(prefix)
        self._scripts: Scripts | None = None

    @property
    def scripts(self) -> Scripts:
        if self._scripts is None:
            self._scripts = Scripts(self.client)
        return self._scripts

    def known_queues(self) -> list[str]:
        return sorted(q.decode() if isinstance(q, bytes) else str(q) for q in self.client.smembers(self.globals.queues))

    def stats(self, queues: Sequence[str]) -> list[QueueStats]:
        """Per-queue figures in one pipelined round trip (per node on a cluster). A tenant group
        ('@<queuePrefix>') is one row: its ready jobs are those on its tenants' lists (one more round
        trip per group: its tenants' list lengths and heads), and its oldest age is that of the oldest
        head among its tenants' lists."""
        asked = now_ms()  # (delayed jobs due by now are waiting too, for the planner)
        with self.client.pipeline(transaction=False) as pipe:
            for queue in queues:
                k = family_keys(self.prefix, queue)
                if isinstance(k, QueueKeys):
                    pipe.llen(k.ready)
                    pipe.lindex(k.ready, 0)
                else:
                    pipe.lrange(k.ring, 0, -1)
                    pipe.lrange(k.qring, 0, -1)
                    pipe.smembers(k.paused_tenants)
                pipe.zcard(k.reserved)
                pipe.zcard(k.delayed)
                pipe.hlen(k.failed)
                pipe.exists(k.paused)
                pipe.zcount(k.delayed, "-inf", asked)
            raw = iter(pipe.execute())
        now = now_ms()
        rows = []  # (queue, ready, its head (None for a group), the group's oldest age, the five counts)
        for queue in queues:
            if is_group_name(queue):
                tenants = {t.decode() for part in (next(raw), next(raw), next(raw)) for t in part}
                ready, group_age = self.group_backlog(queue, tenants, now)
                head = None
            else:
                ready, head, group_age = next(raw), next(raw), None
            rows.append((queue, ready, head, group_age, [next(raw) for _ in range(5)]))
        heads = [(family_keys(self.prefix, queue).attempts, "", head) for queue, _, head, _, _ in rows]
        out = []
        for (queue, ready, _, group_age, counts), since in zip(rows, ready_since(self.client, heads), strict=True):
            reserved, delayed, failed, paused, due = counts
            age = group_age if is_group_name(queue) else age_s(since, now)
            out.append(
                QueueStats(queue, int(ready), int(reserved), int(delayed), int(failed), bool(paused), age, int(due))
            )
        return out

    def group_backlog(self, served_name: str, tenants: Iterable[str], now: int) -> tuple[int, float | None]:
        """Ready jobs across a tenant group (the lengths of these tenants' lists) and the age of the
        oldest of them (each list is FIFO, so the oldest job is one of the heads)."""
        g = family_keys(self.prefix, served_name)
        assert isinstance(g, TenantGroupKeys)
        order = list(tenants)
        with self.client.pipeline(transaction=False) as pipe:
            for tenant in order:
                pipe.llen(g.tenant(tenant))
                pipe.lindex(g.tenant(tenant), 0)
            replies = pipe.execute()
        heads = [(g.attempts, f"{tenant}\t", head) for tenant, head in zip(order, replies[1::2], strict=True)]
        ages = [age for age in (age_s(since, now) for since in ready_since(self.client, heads)) if age is not None]
        return sum(int(n) for n in replies[::2]), max(ages, default=None)

    def unseen_tenants(self, queue_prefix: str, tenants: list[str]) -> list[str]:
        """Those of `tenants` the group has not seen (no job enqueued or run in the last hour): a typo
        guard for verbs that take a tenant id."""
        g = TenantGroupKeys(self.prefix, queue_prefix)
        with self.client.pipeline(transaction=False) as pipe:
            for tenant in tenants:
                pipe.zscore(g.seen, tenant)
            scores = pipe.execute()
        return [tenant for tenant, score in zip(tenants, scores, strict=True) if score is None]

    def tenant_figures(self, queue_prefix: str, window_s: int = TENANT_WINDOW_S) -> list[TenantFigures]:
        """Figures for every tenant active within the window: one pipelined read of the group's sets,
        then one script call per TENANT_FIGURES_BATCH tenants (their lists and minute hashes read in
        Redis: 10,000 tenants are 20 calls, not 60,000 commands)."""
        g = TenantGroupKeys(self.prefix, queue_prefix)
        now = now_ms()
        with self.client.pipeline(transaction=False) as pipe:
            pipe.zremrangebyscore(g.seen, "-inf", now - TENANTS_FORGOTTEN_AFTER_MS)
            pipe.zrangebyscore(g.seen, now - window_s * 1000, "+inf")
            pipe.hgetall(g.inflight)
            pipe.smembers(g.quarantined)
            pipe.smembers(g.paused_tenants)
            pipe.hgetall(g.tset)
            pipe.hgetall(g.tconf)
            pipe.hgetall(g.limited)
            pipe.hgetall(g.qreason)
            _, seen, inflight_raw, quarantined_raw, paused_raw, *controls = pipe.execute()
        tenants = [t.decode() for t in seen]
        controls_of = tenant_controls(*controls)
        last = now // 60_000
        first = last - (window_s + 59) // 60 + 1
        inflight = {k.decode(): int(v) for k, v in inflight_raw.items()}
        quarantined = {t.decode() for t in quarantined_raw}
        paused = {t.decode() for t in paused_raw}
        out = []
        for start in range(0, len(tenants), calls.TENANT_FIGURES_BATCH):
            batch = tenants[start : start + calls.TENANT_FIGURES_BATCH]
            rows = self.scripts.run(calls.tenant_figures(g, first, last, batch))
            for tenant, (waiting, *minutes) in zip(batch, rows, strict=True):
                figures = TenantFigures(
                    tenant,
                    waiting=int(waiting),
                    in_flight=inflight.get(tenant, 0),
                    quarantined=tenant in quarantined,
                    paused=tenant in paused,
                    **controls_of(tenant),
                )
                for flat in minutes:
                    add_minute(figures, dict(zip(flat[::2], flat[1::2], strict=True)))
                out.append(figures)
        return out

    def failed_records(self, served_name: str, limit: int = 50) -> list[dict[str, Any]]:
        """Newest first, from a queue's failed store or a tenant group's ('@<queuePrefix>')."""
        return [failure.record for failure in self.failures([served_name], limit=limit)]

    def failures(
        self,
        served_names: Sequence[str],
        *,
        handler: str | None = None,
        tenant: str | None = None,
        limit: int | None = None,
    ) -> list[FailedJob]:
        """Failed jobs of these queues or groups, newest first, optionally only one handler's or
        tenant's; read in pages, so retrying all of 100,000 failures never loads them at once."""
        found: list[FailedJob] = []
        for name in served_names:
            k = family_keys(self.prefix, name)
            start, matched = 0, 0
            while limit is None or matched < limit:
                page: list[Any] = list(self.client.zrevrange(k.failed_index, start, start + _PAGE - 1, withscores=True))
                if not page:
                    break
                start += len(page)
                records = self.client.hmget(k.failed, [job_id for job_id, _ in page])
                for (job_id, failed_at), raw in zip(page, records, strict=True):
                    if raw is None:
                        continue
                    failure = FailedJob.of(name, job_id.decode(), int(failed_at), json.loads(raw))
                    if (handler is None or failure.handler == handler) and (tenant is None or failure.tenant == tenant):
                        found.append(failure)
                        matched += 1
        found.sort(key=lambda f: -f.failed_at_ms)
        return found[:limit] if limit is not None else found

    def average_runtimes_ms(self, served_names: Sequence[str], minutes: int = 5) -> dict[str, float | None]:
        """Average job runtime per served name over the last `minutes`; None where nothing ran."""
        return {name: run.average_ms for name, run in self.runs(served_names, minutes).items()}

    def runs(self, served_names: Sequence[str], minutes: int = 5) -> dict[str, Runs]:
        """Jobs finished, their total run time and their wait buckets per served name over the last
        `minutes` (this one included), from the per-minute runtime hashes workers keep."""
        first_minute = now_ms() // 60_000 - minutes + 1
        with self.client.pipeline(transaction=False) as pipe:
            for name in served_names:
                pipe.hgetall(family_keys(self.prefix, name).runtime)
            raw = pipe.execute()
        out: dict[str, Runs] = {}
        for name, fields in zip(served_names, raw, strict=True):
            total, jobs, waits = 0.0, 0, dict[int, int]()
            for raw_field, raw_value in fields.items():
                minute, _, kind = raw_field.decode().partition(":")
                if not minute.isdigit() or int(minute) < first_minute:
                    continue
                if kind == "ms":
                    total += float(raw_value)
                elif kind == "n":
                    jobs += int(raw_value)
                elif kind.startswith("w"):
                    waits[int(kind[1:])] = waits.get(int(kind[1:]), 0) + int(raw_value)
            out[name] = Runs(jobs, total, waits)
        return out

    def workers(self, stale_after_ms: int = WORKER_STALE_MS) -> list[dict[str, Any]]:
        """Live worker processes (a beat within `stale_after_ms`); older entries are dropped."""
        now, live, stale = now_ms(), list[dict[str, Any]](), list[Any]()
        entries: dict[Any, Any] = self.client.hgetall(self.globals.workers)
        for name, raw in entries.items():
            try:
                beat = json.loads(raw)
                fresh = now - int(beat["at"]) <= stale_after_ms
            except (ValueError, KeyError, TypeError):
                fresh = False
            if fresh:
                live.append({"name": name.decode() if isinstance(name, bytes) else name, **beat})
            else:
                stale.append(name)
        if stale:
            self.client.hdel(self.globals.workers, *stale)
        return live


@dataclass(frozen=True)
class Runs:
    jobs: int
    total_ms: float
    waits: dict[int, int] = field(default_factory=dict)  # wait bucket -> jobs (fairway.queue.access.figures)

    @property
    def average_ms(self) -> float | None:
        return self.total_ms / self.jobs if self.jobs else None

    def wait_ms(self, q: float) -> float | None:
        return quantile_ms(self.waits, q)


def ready_since(client: RedisClient, heads: Sequence[tuple[str, str, bytes | None]]) -> list[int | None]:
    """When each ready job (attempts hash, job-key prefix, document) became ready: the time it was
    handed back (lib.lua's mark_ready: end of a backoff, a retry by hand, a lost worker), else its
    document's due or enqueue time; None for no job or a document that is not one. One pipelined
    round trip for them all (none when no head is a job); a job's age, like its wait, never counts
    its own backoff."""
    jobs: list[Job | None] = []
    for _, _, head in heads:
        try:
            jobs.append(None if head is None else decode(head))
        except JobError:
            jobs.append(None)
    if not any(jobs):
        return [None] * len(heads)
    with client.pipeline(transaction=False) as pipe:
        for (attempts, key_prefix, _), job in zip(heads, jobs, strict=True):
            if job is not None:
                pipe.hget(attempts, f"{key_prefix}{job.id}{READY_FIELD}")
        marks = iter(pipe.execute())
    return [None if job is None else _int_or(next(marks), job.ready_since_ms) for job in jobs]


def age_s(since: int | None, now: int) -> float | None:
    """How long a job has been ready (seconds), from `ready_since`; None for no job, or a
    document that said nothing (decoding is total and bounded: a poison document cannot break a read)."""
    return max(0.0, (now - since) / 1000) if since else None


def _int_or(raw: bytes | None, default: int) -> int:
    return int(raw) if raw else default
