"""All Redis I/O of the worker and the producer: connections, the Lua scripts, and the reads for the CLI.

Two paths, chosen once at connect time:
- standalone: `reserve.lua` acknowledges the finished job and reserves the next in one round trip,
  drawing only among served queues that hold work (the `active` set), and an idle worker blocks
  with one BLMPOP over every served queue's notify list;
- Redis Cluster: every script touches one queue's keys only (one hash slot), queues are tried in
  the poll's weighted order, and an idle worker polls every 100 ms, because a blocking read across
  slots is illegal (CROSSSLOT).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import redis
from redis.cluster import RedisCluster

from fairway.figures import QueueStats, TenantFigures, add_minute
from fairway.keys import DEFAULT_PREFIX, GlobalKeys, QueueKeys, TenantGroupKeys
from fairway.settings import TenantSettings

RedisClient = redis.Redis | RedisCluster
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.BusyLoadingError,
    redis.exceptions.ClusterDownError,
    redis.exceptions.TryAgainError,
    ConnectionResetError,
)
MAINTAIN_BATCH = 200
FAILED_KEPT = 100_000
CLUSTER_POLL_S = 0.1


def _script(name: str) -> str:
    """A script's source with its `-- #include <file>` lines replaced by that file (shared functions)."""
    folder = resources.files("fairway").joinpath("scripts")
    lines = folder.joinpath(f"{name}.lua").read_text().splitlines()
    return "\n".join(
        folder.joinpath(line.split()[-1]).read_text() if line.startswith("-- #include ") else line for line in lines
    )


def connect(url: str, cluster: bool | None = None, *, socket_timeout_s: float = 10.0) -> RedisClient:
    """A client for `url`; Redis Cluster when `cluster` is true, or when None and the server says so."""
    options: dict[str, Any] = {
        "socket_timeout": socket_timeout_s,
        "socket_connect_timeout": 5.0,
        "socket_keepalive": True,
    }
    if cluster is None:
        probe = redis.Redis.from_url(url, **options)
        try:
            cluster = bool(probe.info("cluster").get("cluster_enabled"))
        finally:
            probe.close()
    if cluster:
        return RedisCluster.from_url(url, **options)
    return redis.Redis.from_url(url, **options)


@dataclass(frozen=True)
class Reservation:
    queue: str  # a queue name, or the tenant group's '@<queuePrefix>'
    payload: bytes  # the job document
    attempts: int  # attempts started, this one included
    tenant: str | None = None

    @property
    def member(self) -> bytes:
        """What the reserved set holds: the document, prefixed by '<tenant>\\t' inside a tenant group."""
        return self.payload if self.tenant is None else self.tenant.encode() + b"\t" + self.payload


@dataclass(frozen=True)
class TenantGroup:
    """A tenant group as one worker serves it: its settings, and the keys they lead to."""

    settings: TenantSettings
    prefix: str = DEFAULT_PREFIX

    @property
    def keys(self) -> TenantGroupKeys:
        return TenantGroupKeys(self.prefix, self.settings.queue_prefix)

    @property
    def name(self) -> str:
        return self.keys.name

    @property
    def max_consecutive(self) -> int:
        return self.settings.max_consecutive

    @property
    def quarantine_failures(self) -> int:
        return self.settings.quarantine_failures

    @property
    def quarantine_window_ms(self) -> int:
        return int(self.settings.quarantine_window_s * 1000)

    @property
    def sample_rate(self) -> float:
        return self.settings.sample_rate


def _now_ms() -> int:
    return int(time.time() * 1000)


def group_for(prefix: str, tenants: TenantSettings | None) -> TenantGroup | None:
    return None if tenants is None else TenantGroup(tenants, prefix)


class Store:
    """One Redis connection's worth of Fairway operations."""

    def __init__(self, client: RedisClient, prefix: str = DEFAULT_PREFIX, group: TenantGroup | None = None) -> None:
        self.client = client
        self.prefix = prefix
        self.group = group
        self.cluster = isinstance(client, RedisCluster)
        self._hot: Any = None
        self.globals = GlobalKeys(prefix)
        self._scripts = {
            name: client.register_script(_script(name))
            for name in (
                "enqueue",
                "reserve",
                "reserve_one",
                "ack",
                "release",
                "fail",
                "maintain",
                "enqueue_tenant",
                "reserve_tenant",
                "ack_tenant",
                "release_tenant",
                "fail_tenant",
                "maintain_tenant",
            )
        }

    def keys(self, queue: str) -> QueueKeys:
        return QueueKeys(self.prefix, queue)

    def _active(self) -> list[str]:
        """The active-set key as an optional trailing KEYS entry: standalone only."""
        return [] if self.cluster else [self.globals.active]

    # -- producing -------------------------------------------------------------------------------

    def enqueue(self, queue: str, payload: bytes, delay_ms: int = 0) -> None:
        k = self.keys(queue)
        self._scripts["enqueue"](keys=[k.ready, k.notify, k.delayed, *self._active()], args=[payload, delay_ms, queue])
        self._remember([queue])

    def enqueue_many(self, queue: str, payloads: Sequence[bytes], chunk: int = 1000) -> None:
        """Bulk enqueue: one pipelined transaction per chunk, all-or-nothing per chunk."""
        k = self.keys(queue)
        for start in range(0, len(payloads), chunk):
            part = payloads[start : start + chunk]
            with self.client.pipeline(transaction=not self.cluster) as pipe:
                pipe.rpush(k.ready, *part)
                pipe.rpush(k.notify, *([b"1"] * len(part)))
                if not self.cluster:
                    pipe.sadd(self.globals.active, queue)
                pipe.execute()
        self._remember([queue])

    def enqueue_tenant(self, queue_prefix: str, tenant: str, payloads: Sequence[bytes], delay_ms: int = 0) -> None:
        """Tenant jobs: onto the tenant's list, the tenant onto the ring if it was idle; one call per batch."""
        g = TenantGroupKeys(self.prefix, queue_prefix)
        for start in range(0, len(payloads), 1000):  # one call per 1,000 documents: short script runs
            self._scripts["enqueue_tenant"](
                keys=[g.ring, *self._active()],
                args=[g.base, tenant, delay_ms, g.name, *payloads[start : start + 1000]],
            )

    def _remember(self, queues: Iterable[str]) -> None:
        names = [q for q in queues if not q.startswith("@")]
        if names:
            self.client.sadd(self.globals.queues, *names)

    # -- serving ---------------------------------------------------------------------------------

    def register_served(self, queues: Sequence[str], strict: bool, weights: Sequence[int]) -> tuple[str, str]:
        """Publish a worker's served set and weights for reserve.lua (idempotent, refreshed on sweeps)."""
        served_set, served_weights = self.globals.served(tuple(queues), (int(strict), *weights))
        self._remember(queues)
        if not self.cluster:
            with self.client.pipeline(transaction=True) as pipe:
                pipe.delete(served_set, served_weights)
                pipe.sadd(served_set, *queues)
                pipe.hset(served_weights, mapping=dict(zip(queues, weights, strict=True)))
                pipe.expire(served_set, 86_400)
                pipe.expire(served_weights, 86_400)
                pipe.execute()
        return served_set, served_weights

    def reserve_weighted(
        self,
        served: tuple[str, str],
        strict: bool,
        u: float,
        retry_after_ms: int,
        ack: Reservation | None,
        ack_wait_bucket: int = -1,
    ) -> Reservation | None:
        """Standalone: ack `ack` (if any) and reserve the next job, in one round trip."""
        g = self.group
        args = [
            self.prefix,
            retry_after_ms,
            repr(u),
            "1" if strict else "0",
            ack.queue if ack else "",
            ack.member if ack else b"",
            g.name if g else "",
            g.keys.base if g else "",
            g.max_consecutive if g else 0,
            g.quarantine_failures if g else 0,
            g.quarantine_window_ms if g else 0,
            repr(g.sample_rate) if g else "0",
            ack_wait_bucket,
        ]
        result = self._hot_eval("reserve", [self.globals.active, *served], args)
        if not result:
            return None
        queue, payload, attempts, tenant = result
        return Reservation(queue.decode(), payload, int(attempts), tenant.decode() if tenant else None)

    def _hot_eval(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """EVALSHA on a connection kept for the hot path, skipping the client's per-command layers
        (pool checkout, retries, instrumentation), which cost ~30 us a job here (bench/throughput.py).
        Connection errors close it and propagate (the worker's outage handling retries); a Redis that
        restarted and forgot the script gets it loaded again."""
        script = self._scripts[name]
        if self._hot is None:
            assert isinstance(self.client, redis.Redis), "the hot path is standalone-only"
            self._hot = self.client.connection_pool.get_connection()
        conn = self._hot
        try:
            conn.send_command("EVALSHA", script.sha, len(keys), *keys, *args)
            return conn.read_response()
        except redis.exceptions.NoScriptError:
            self.client.script_load(script.script)
            conn.send_command("EVALSHA", script.sha, len(keys), *keys, *args)
            return conn.read_response()
        except BaseException:
            conn.disconnect()  # a half-read reply must never be read as the next call's
            raise

    def reserve_in_order(self, order: Sequence[str], retry_after_ms: int, u: float = 0.0) -> Reservation | None:
        """Cluster: try each queue in this poll's order, one single-slot script per queue."""
        for queue in order:
            if self.group is not None and queue == self.group.name:
                got = self._reserve_tenant(u, retry_after_ms)
                if got is not None:
                    return got
                continue
            k = self.keys(queue)
            result = self._scripts["reserve_one"](
                keys=[k.ready, k.reserved, k.notify, k.attempts, k.paused], args=[retry_after_ms]
            )
            if result:
                payload, attempts = result
                return Reservation(queue, payload, int(attempts))
        return None

    def _reserve_tenant(self, u: float, retry_after_ms: int) -> Reservation | None:
        g = self._group()
        result = self._scripts["reserve_tenant"](
            keys=[g.keys.ring],
            args=[
                g.keys.base,
                g.max_consecutive,
                g.quarantine_failures,
                g.quarantine_window_ms,
                repr(g.sample_rate),
                repr(u),
                retry_after_ms,
            ],
        )
        if not result:
            return None
        tenant, payload, attempts = result
        return Reservation(g.name, payload, int(attempts), tenant.decode())

    def _group(self) -> TenantGroup:
        if self.group is None:
            raise RuntimeError("this store serves no tenant group")
        return self.group

    def ack(self, reservation: Reservation, wait_bucket: int = -1) -> bool:
        if reservation.tenant is not None:
            g = self._group()
            return bool(
                self._scripts["ack_tenant"](keys=[g.keys.reserved], args=[g.keys.base, reservation.member, wait_bucket])
            )
        k = self.keys(reservation.queue)
        return bool(self._scripts["ack"](keys=[k.reserved, k.attempts], args=[reservation.payload]))

    def release(self, reservation: Reservation, delay_ms: int, wait_bucket: int = -1) -> bool:
        if reservation.tenant is not None:
            g = self._group()
            return bool(
                self._scripts["release_tenant"](
                    keys=[g.keys.reserved, *self._active()],
                    args=[
                        g.keys.base,
                        reservation.member,
                        delay_ms,
                        g.quarantine_window_ms,
                        g.quarantine_failures,
                        wait_bucket,
                        g.name,
                    ],
                )
            )
        k = self.keys(reservation.queue)
        return bool(
            self._scripts["release"](
                keys=[k.reserved, k.delayed, k.ready, k.notify, *self._active()],
                args=[reservation.payload, delay_ms, reservation.queue],
            )
        )

    def fail(self, reservation: Reservation, job_id: str, record: dict[str, Any], wait_bucket: int = -1) -> None:
        if reservation.tenant is not None:
            g = self._group()
            self._scripts["fail_tenant"](
                keys=[g.keys.reserved],
                args=[
                    g.keys.base,
                    reservation.member,
                    job_id,
                    json.dumps(record),
                    FAILED_KEPT,
                    g.quarantine_window_ms,
                    g.quarantine_failures,
                    wait_bucket,
                ],
            )
            return
        k = self.keys(reservation.queue)
        self._scripts["fail"](
            keys=[k.reserved, k.attempts, k.failed, k.failed_index],
            args=[reservation.payload, job_id, json.dumps(record), FAILED_KEPT],
        )

    def maintain(self, queues: Sequence[str]) -> tuple[int, int, int]:
        """Move due delayed jobs and expired reservations back to ready; (due, expired, ready) summed.

        Pipelined on a standalone Redis; one call per queue on a cluster, whose pipelines refuse
        scripts. Either way it runs on a timer and when going idle, never per job.
        """
        calls: list[tuple[str, list[str], list[str | int]]] = [
            ("maintain", [k.ready, k.reserved, k.delayed, k.notify, *self._active()], [MAINTAIN_BATCH, queue])
            for queue in queues
            for k in [self.keys(queue)]
        ]
        if self.group is not None:
            g = self.group.keys
            calls.append(("maintain_tenant", [g.ring, *self._active()], [g.base, MAINTAIN_BATCH, g.name]))
        if not calls:
            return (0, 0, 0)
        if self.cluster:
            results = [self._scripts[name](keys=keys, args=args) for name, keys, args in calls]
        else:
            with self.client.pipeline(transaction=False) as pipe:
                for name, keys, args in calls:
                    self._scripts[name](keys=keys, args=args, client=pipe)
                results = pipe.execute()
        due = sum(int(r[0]) for r in results)
        expired = sum(int(r[1]) for r in results)
        ready = sum(int(r[2]) for r in results)
        return due, expired, ready

    def wait_for_work(self, queues: Sequence[str], timeout_s: float) -> bool:
        """Standalone: one blocking read across every served queue's notify list; True when woken."""
        if timeout_s <= 0:
            return False
        notify = [self.keys(q).notify for q in queues]
        if self.group is not None:
            notify.append(self.group.keys.notify)
        # BLMPOP takes a float timeout in seconds; the socket timeout was set above it at connect time.
        result = self.client.blmpop(timeout_s, len(notify), *notify, direction="LEFT", count=1)
        return bool(result)

    def pending_delayed(self, queues: Sequence[str]) -> int:
        with self.client.pipeline(transaction=False) as pipe:
            for queue in queues:
                pipe.zcard(self.keys(queue).delayed)
            if self.group is not None:
                pipe.zcard(self.group.keys.delayed)
            return sum(int(n) for n in pipe.execute())

    # -- runtimes (for the auto-balancer's `time` strategy) -----------------------------------------

    def _runtime_key(self, queue: str) -> str:
        """Per queue, or per tenant group for its '@<queuePrefix>' name."""
        keys = TenantGroupKeys(self.prefix, queue[1:]) if queue.startswith("@") else self.keys(queue)
        return keys.base + "runtime"

    def record_runtimes(self, runtimes: dict[str, tuple[float, int]], now_ms: int | None = None) -> None:
        """Add a timer tick's (total ms, jobs) per served name to per-minute counters (kept 15 minutes)."""
        if not runtimes:
            return
        minute = (now_ms or _now_ms()) // 60_000
        with self.client.pipeline(transaction=False) as pipe:
            for queue, (total_ms, jobs) in runtimes.items():
                key = self._runtime_key(queue)
                pipe.hincrbyfloat(key, f"{minute}:ms", total_ms)
                pipe.hincrby(key, f"{minute}:n", jobs)
                pipe.expire(key, 900)
            pipe.execute()

    def average_runtimes_ms(self, queues: Sequence[str], minutes: int = 5) -> dict[str, float | None]:
        """Average job runtime per served name over the last `minutes`; None where nothing ran."""
        now_minute = _now_ms() // 60_000
        fields = [f"{m}:{kind}" for m in range(now_minute - minutes + 1, now_minute + 1) for kind in ("ms", "n")]
        with self.client.pipeline(transaction=False) as pipe:
            for queue in queues:
                pipe.hmget(self._runtime_key(queue), fields)
            raw = pipe.execute()
        out: dict[str, float | None] = {}
        for queue, values in zip(queues, raw, strict=True):
            total = sum(float(v) for v in values[0::2] if v is not None)
            jobs = sum(int(v) for v in values[1::2] if v is not None)
            out[queue] = total / jobs if jobs else None
        return out

    # -- pausing ---------------------------------------------------------------------------------

    def pause(self, queue: str) -> None:
        self.client.set(self.keys(queue).paused, b"1")
        self._remember([queue])

    def resume(self, queue: str) -> None:
        self.client.delete(self.keys(queue).paused)

    def set_paused(self, queues: Sequence[str], paused: Iterable[str]) -> None:
        """Make exactly `paused` (a subset of `queues`) paused; what the operator pushes from the spec."""
        wanted = set(paused)
        with self.client.pipeline(transaction=False) as pipe:
            for queue in queues:
                if queue in wanted:
                    pipe.set(self.keys(queue).paused, b"1")
                else:
                    pipe.delete(self.keys(queue).paused)
            pipe.execute()

    # -- reading ---------------------------------------------------------------------------------

    def known_queues(self) -> list[str]:
        return sorted(q.decode() if isinstance(q, bytes) else str(q) for q in self.client.smembers(self.globals.queues))

    def stats(self, queues: Sequence[str]) -> list[QueueStats]:
        """Per-queue figures in one pipelined round trip (per node on a cluster)."""
        with self.client.pipeline(transaction=False) as pipe:
            for queue in queues:
                k = self.keys(queue)
                pipe.llen(k.ready)
                pipe.zcard(k.reserved)
                pipe.zcard(k.delayed)
                pipe.hlen(k.failed)
                pipe.exists(k.paused)
                pipe.lindex(k.ready, 0)
            raw = pipe.execute()
        now = _now_ms()
        out = []
        for index, queue in enumerate(queues):
            ready, reserved, delayed, failed, paused, head = raw[index * 6 : index * 6 + 6]
            out.append(
                QueueStats(queue, int(ready), int(reserved), int(delayed), int(failed), bool(paused), _age_s(head, now))
            )
        return out

    def _failed_keys(self, queue: str) -> QueueKeys | TenantGroupKeys:
        """A queue's failed store, or a tenant group's when `queue` is '@<queuePrefix>'."""
        return TenantGroupKeys(self.prefix, queue[1:]) if queue.startswith("@") else self.keys(queue)

    def failed_records(self, queue: str, limit: int = 50) -> list[dict[str, Any]]:
        k = self._failed_keys(queue)
        ids: list[Any] = list(self.client.zrevrange(k.failed_index, 0, limit - 1))
        if not ids:
            return []
        records = self.client.hmget(k.failed, ids)
        return [json.loads(r) for r in records if r is not None]

    def retry_failed(self, queue: str, job_id: str) -> bool:
        """Put a failed job back on its queue with a fresh attempt count; False when there is no such job."""
        k = self._failed_keys(queue)
        raw = self.client.hget(k.failed, job_id)
        if raw is None:
            return False
        record = json.loads(raw)
        if isinstance(k, TenantGroupKeys):
            self.enqueue_tenant(k.queue_prefix, record["tenant"], [record["payload"].encode()])
        else:
            self.enqueue(queue, record["payload"].encode())
        self.forget_failed(queue, job_id)
        return True

    def forget_failed(self, queue: str, job_id: str) -> bool:
        k = self._failed_keys(queue)
        with self.client.pipeline(transaction=not self.cluster) as pipe:
            pipe.hdel(k.failed, job_id)
            pipe.zrem(k.failed_index, job_id)
            removed, _ = pipe.execute()
        return bool(removed)


def tenant_figures(store: Store, queue_prefix: str, window_s: int = 300) -> list[TenantFigures]:
    """Figures for every tenant active within the window: two pipelined round trips."""
    g = TenantGroupKeys(store.prefix, queue_prefix)
    client = store.client
    now = _now_ms()
    client.zremrangebyscore(g.seen, "-inf", now - 3_600_000)  # tenants quiet for an hour are forgotten
    seen: list[Any] = list(client.zrangebyscore(g.seen, now - window_s * 1000, "+inf"))
    tenants = [t.decode() for t in seen]
    minutes = range(now // 60_000 - (window_s + 59) // 60 + 1, now // 60_000 + 1)
    with client.pipeline(transaction=False) as pipe:
        pipe.hgetall(g.inflight)
        pipe.smembers(g.quarantined)
        for tenant in tenants:
            pipe.llen(g.tenant(tenant))
            for minute in minutes:
                pipe.hgetall(g.stats(tenant, minute))
        raw = pipe.execute()
    inflight = {k.decode(): int(v) for k, v in raw[0].items()}
    quarantined = {t.decode() for t in raw[1]}
    out = []
    step = 1 + len(minutes)
    for index, tenant in enumerate(tenants):
        chunk = raw[2 + index * step : 2 + (index + 1) * step]
        figures = TenantFigures(
            tenant, waiting=int(chunk[0]), in_flight=inflight.get(tenant, 0), quarantined=tenant in quarantined
        )
        for minute in chunk[1:]:
            add_minute(figures, minute)
        out.append(figures)
    return out


def _age_s(head: bytes | None, now_ms: int) -> float | None:
    """Age of the oldest ready job from its document's timestamps; None when empty or unreadable."""
    if head is None:
        return None
    try:
        doc = json.loads(head)
        since = doc.get("available_at") or doc.get("enqueued_at")
        return max(0.0, (now_ms - int(since)) / 1000) if since else None
    except (ValueError, TypeError, AttributeError):
        return None
