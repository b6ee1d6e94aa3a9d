"""How a worker takes jobs from Redis and gives them back: the fetch strategy, chosen once at start.

- Standalone Redis (`StandaloneFetcher`): `reserve.lua` acknowledges the finished job and reserves
  the next in one round trip, drawing only among served names that hold work (the `active` set);
  an idle worker blocks with one BLMPOP over every served queue's notify list.
- Redis Cluster (`ClusterFetcher`): every script touches one queue's keys only (one hash slot),
  queues are tried in the poll's weighted order, and an idle worker polls every 100 ms, because a
  blocking read across slots is illegal (CROSSSLOT).
Everything else (settling, housekeeping, runtimes) is the same for both and lives in `Fetcher`.
"""

from __future__ import annotations

import itertools
import json
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fairway.queue.access.figures import RunTally
from fairway.queue.access.producer import Producer
from fairway.queue.connection import RedisClient, is_cluster
from fairway.queue.protocol import calls
from fairway.queue.protocol.calls import NO_WAIT_BUCKET, Ack, Kept, Reservation, ScriptCall, TenantGroup, holder_tag
from fairway.queue.protocol.hotline import HotLine
from fairway.queue.protocol.keys import GlobalKeys, QueueKeys, family_keys
from fairway.queue.protocol.scheduling import rank_table, weighted_order
from fairway.queue.runtime.identity import worker_identity
from fairway.resource.worker_settings import WorkerSettings

POLL_S = 0.1  # idle polling interval where one blocking read is impossible (cluster) or not wanted
SERVED_SET_TTL_S = 86_400  # a served set outlives its workers by a day; every refresh renews it
RUNTIMES_KEPT_S = 900  # per-minute runtime counters, for the auto-balancer's 5-minute averages
REDIS_TICK_S = 0.1  # how late Redis may time a blocked client out (its clock tick at the default hz)
SHORT_WAIT_S = (
    0.2  # a rate token due sooner than this is slept for, not blocked for (Redis times blocks out in 100 ms ticks)
)


@dataclass(frozen=True)
class Renewal:
    """One round of lease renewals: jobs whose lease had run out, and jobs someone cancelled."""

    gone: list[Reservation]
    cancelled: list[Reservation]


class Fetcher(ABC):
    """The worker's Redis side, whichever the strategy."""

    def __init__(
        self,
        client: RedisClient,
        settings: WorkerSettings,
        rng: random.Random | None = None,
        identity: str | None = None,
    ) -> None:
        self.client = client
        self.identity = identity or worker_identity()
        self._calls = itertools.count(1)
        self.prefix = settings.prefix
        self.producer = Producer(client, settings.prefix)
        self.scripts = self.producer.scripts
        self.globals = GlobalKeys(settings.prefix)
        self.group = TenantGroup(settings.tenants, settings.prefix) if settings.tenants is not None else None
        self.queues = [q for q in settings.queues if q not in settings.paused]
        self.served = [*self.queues, *([self.group.name] if self.group else [])]
        self.weights = settings.served_weights()
        self.strict, self.ranks = rank_table(self.served, self.weights)
        self.retry_after_ms = settings.retry_after_ms
        self.rng = rng or random.Random()
        # Each served name's settle calls, decided here once: a reservation carries its own.
        self.families = calls.families(self.prefix, self.queues, self.group, self.active)

    @property
    def active(self) -> str | None:
        return self.producer.active

    def _holder(self) -> str:
        """A fresh tag for one reserve call's reservations (calls.holder_tag)."""
        return holder_tag(self.identity, next(self._calls))

    # -- the strategy ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Publish what this worker serves (on start, on the housekeeping timer, after an outage)."""
        self.producer.remember(self.served)

    @abstractmethod
    def reserve(
        self, acks: Sequence[Ack] = (), count: int = 1, while_waiting: Callable[[], Any] | None = None
    ) -> list[Reservation]:
        """Acknowledge `acks` (jobs that succeeded) and reserve up to `count` jobs, each drawn by the
        weighted rule (and the tenant ring) as if it were the only one; `while_waiting` is called
        once, while the call is on the wire where it can be (work that need not delay the next job)."""

    def send_acks(self, acks: Sequence[Ack]) -> None:
        """Acknowledge `acks` alone (a flush while draining or on the housekeeping timer)."""
        self.reserve(acks, 0)

    @abstractmethod
    def forget_registration(self) -> None:
        """After an outage Redis may have restarted empty: forget what must be registered again
        before the next reserve."""

    def wait_for_work(self, block_for_s: float, until_maintenance_s: float) -> float | None:
        """Idle until work may have arrived: at most `block_for_s`, waking for housekeeping (which moves
        delayed jobs when they fall due). Returns seconds until the earliest delayed job it saw is due
        (from when it began waiting), or None when it did not look."""
        time.sleep(max(0.0, min(POLL_S, until_maintenance_s)))
        return None

    def renew(self, held: Sequence[Reservation]) -> Renewal:
        """Renew the leases of the jobs this process holds: one call per queue or tenant group (each
        touches one slot, so it is legal on a cluster). Returns those whose lease had already run out,
        and those someone cancelled (docs/cancel.md)."""
        by_family: dict[str, list[Reservation]] = {}
        for reservation in held:
            by_family.setdefault(reservation.settles.reserved, []).append(reservation)
        renewal = Renewal([], [])
        for reserved, reservations in by_family.items():
            by_member = {r.member: r for r in reservations}
            missing, cancelled = self.scripts.run(calls.renew(reserved, list(by_member), self.retry_after_ms))
            renewal.gone.extend(by_member[_member(m)] for m in missing)
            renewal.cancelled.extend(by_member[_member(m)] for m in cancelled)
        return renewal

    def abandon_wait(self) -> None:
        """A signal cut a blocking read short: the connection may hold half a reply, so drop it."""
        self.client.close()

    # -- settling --------------------------------------------------------------------------------

    def ack(
        self,
        reservation: Reservation,
        wait_bucket: int = NO_WAIT_BUCKET,
        kept: Kept | None = None,
        cancelled: bool = False,
    ) -> bool:
        """A call of its own (acks usually ride on the next reserve call): at shutdown, on a cluster, for
        a job that keeps its result, which is written in the same step, and for a cancelled job."""
        return bool(self.scripts.run(reservation.settles.ack(reservation.member, wait_bucket, kept, cancelled)))

    def release(self, reservation: Reservation, delay_ms: int, wait_bucket: int = NO_WAIT_BUCKET) -> bool:
        """A failed attempt with tries left goes back, after `delay_ms` (backoff) or at once."""
        return bool(self.scripts.run(reservation.settles.release(reservation.member, delay_ms, wait_bucket)))

    def hand_back(self, reservation: Reservation, delay_ms: int, grace_ms: int) -> bool:
        """A job for a handler this worker does not know goes back for another worker, no try spent;
        False when its grace (from its first hand-back) is over and it is still leased here."""
        call = reservation.settles.release(reservation.member, delay_ms, NO_WAIT_BUCKET, grace_ms)
        return int(self.scripts.run(call)) != calls.GRACE_OVER

    def fail(
        self,
        reservation: Reservation,
        job_id: str,
        record: dict[str, Any],
        wait_bucket: int = NO_WAIT_BUCKET,
        kept: Kept | None = None,
    ) -> None:
        call = reservation.settles.fail(reservation.member, job_id, json.dumps(record), wait_bucket, kept)
        self.scripts.run(call)

    # -- housekeeping ----------------------------------------------------------------------------

    def maintain(self) -> tuple[int, int, int, int | None]:
        """Move due delayed jobs and expired reservations back to ready; (due, expired, ready) summed,
        and ms until the earliest delayed job left falls due (None: none is left).

        Pipelined on a standalone Redis; one call per queue on a cluster, whose pipelines refuse
        scripts. Either way it runs on a timer and when going idle, never per job.
        """
        batch: list[ScriptCall] = [calls.maintain(QueueKeys(self.prefix, q), self.active) for q in self.queues]
        if self.group is not None:
            batch.append(calls.maintain_tenant(self.group, self.active))
        results = self._run_all(batch)
        return (
            sum(int(r[0]) for r in results),
            sum(int(r[1]) for r in results),
            sum(int(r[2]) for r in results),
            min((int(r[3]) for r in results if int(r[3]) >= 0), default=None),
        )

    def _run_all(self, batch: Sequence[ScriptCall]) -> list[Any]:
        if is_cluster(self.client):
            return [self.scripts.run(call) for call in batch]
        with self.client.pipeline(transaction=False) as pipe:
            for call in batch:
                self.scripts.run(call, pipe)
            return list(pipe.execute())

    def pending_delayed(self) -> int:
        """Jobs waiting out a delay or backoff, and tenants waiting out their cap or rate: a burst
        worker is not done while any remain."""
        with self.client.pipeline(transaction=False) as pipe:
            for queue in self.queues:
                pipe.zcard(QueueKeys(self.prefix, queue).delayed)
            if self.group is not None:
                pipe.zcard(self.group.keys.delayed)
                pipe.zcard(self.group.keys.parked)  # tenants waiting out their cap or rate, jobs kept
            return sum(int(n) for n in pipe.execute())

    def record_runtimes(self, runtimes: dict[str, RunTally], now_ms: int) -> None:
        """Add a timer tick's run time, jobs and wait buckets per served name to per-minute counters
        (one pipelined write per tick, however many jobs ran)."""
        if not runtimes:
            return
        minute = now_ms // 60_000
        with self.client.pipeline(transaction=False) as pipe:
            for name, tally in runtimes.items():
                key = family_keys(self.prefix, name).runtime
                pipe.hincrbyfloat(key, f"{minute}:ms", tally.total_ms)
                pipe.hincrby(key, f"{minute}:n", tally.jobs)
                for bucket, n in tally.waits.items():
                    pipe.hincrby(key, f"{minute}:w{bucket}", n)
                pipe.expire(key, RUNTIMES_KEPT_S)
            pipe.execute()

    def heartbeat(self, worker: str, beat: dict[str, object] | None) -> None:
        """This process in the workers hash (for dashboards' process counts), or out of it (None)."""
        key = self.globals.workers
        if beat is None:
            self.client.hdel(key, worker)
        else:
            self.client.hset(key, worker, json.dumps(beat))


class StandaloneFetcher(Fetcher):
    def __init__(
        self,
        client: RedisClient,
        settings: WorkerSettings,
        rng: random.Random | None = None,
        identity: str | None = None,
    ) -> None:
        super().__init__(client, settings, rng, identity)
        self.served_keys = self.globals.served(tuple(self.served), (int(self.strict), *self.ranks))
        self._reserve_call = calls.reserve(
            self.globals, self.served_keys, self.group, retry_after_ms=self.retry_after_ms, strict=self.strict
        )
        self._registered = False

    def refresh(self) -> None:
        """The served set and its weights, for reserve.lua (written together, expiring together), and
        the queue registry: one script, which runs even when Redis is out of memory."""
        weights = dict(zip(self.served, self.ranks, strict=True))
        self.scripts.run(calls.register(self.globals, self.served_keys, weights, SERVED_SET_TTL_S))
        self._registered = True

    def forget_registration(self) -> None:
        self._registered = False  # the served set goes first again: reserve.lua draws from it

    def reserve(
        self, acks: Sequence[Ack] = (), count: int = 1, while_waiting: Callable[[], Any] | None = None
    ) -> list[Reservation]:
        return self._reservations(self.hot.run(self._call(acks, count), while_waiting))

    @property
    def hot(self) -> HotLine:
        return self.scripts.hot

    def send_reserve(self, acks: Sequence[Ack], count: int) -> int:
        """`reserve`, put on the wire without waiting for its reply (the pooled worker overlaps its
        round trips): returns the call's number, which `reserve_reply` gives back with its jobs."""
        return self.hot.send(self._call(acks, count))

    def reserve_reply(self) -> tuple[int, list[Reservation]] | None:
        """The oldest reserve call's jobs (waiting for its reply), or None when it had to be sent again
        (a Redis that forgot its script)."""
        got = self.hot.receive()
        return None if got is None else (got[0], self._reservations(got[1]))

    def _call(self, acks: Sequence[Ack], count: int) -> ScriptCall:
        if not self._registered:
            self.refresh()
        random = self.rng.random
        return self._reserve_call.call(self._holder(), acks, [random() for _ in range(count)])

    def _reservations(self, flat: list[Any]) -> list[Reservation]:
        families = self.families
        out = []
        for i in range(0, len(flat), 7):
            name = flat[i].decode()
            tenant = flat[i + 3].decode() if flat[i + 3] else None
            ready_at = int(flat[i + 6]) if flat[i + 6] else None
            out.append(
                Reservation(
                    name, flat[i + 1], int(flat[i + 2]), tenant, int(flat[i + 4]), flat[i + 5], ready_at, families[name]
                )
            )
        return out

    def wait_for_work(self, block_for_s: float, until_maintenance_s: float) -> float | None:
        if block_for_s == 0:
            return super().wait_for_work(block_for_s, until_maintenance_s)
        token_due_s, delayed_due_s = self._until_due_s()
        if token_due_s < SHORT_WAIT_S or delayed_due_s < REDIS_TICK_S:
            # Redis times blocked clients out on its own clock tick (100 ms at the default hz), too
            # coarse for a rate's next token or a delayed job's due time: sleep here instead.
            time.sleep(min(token_due_s, delayed_due_s))
            return delayed_due_s
        # Blocked until a tick before a delayed job is due (then slept for exactly, above); a new
        # earlier one wakes the block through its notify token (enqueue.lua's schedule).
        delayed_block_s = delayed_due_s - REDIS_TICK_S
        timeout = min(block_for_s, max(0.01, until_maintenance_s), token_due_s, delayed_block_s)
        notify = [QueueKeys(self.prefix, q).notify for q in self.queues]
        if self.group is not None:
            notify += [self.group.keys.notify, self.group.keys.wake]
        # BLMPOP takes a float timeout in seconds; the socket timeout was set above it at connect time.
        self.client.blmpop(timeout, len(notify), *notify, direction="LEFT", count=1)
        return delayed_due_s

    def _until_due_s(self) -> tuple[float, float]:
        """Seconds until the first tenant parked for its rate has its next token (the reserve that
        follows puts it back in the ring), and until the earliest delayed job of any served queue is
        due (housekeeping moves it): an idle worker wakes for either, not a poll later. One round trip
        each time it goes idle."""
        with self.client.pipeline(transaction=False) as pipe:
            pipe.time()
            if self.group is not None:
                pipe.zrangebyscore(self.group.keys.parked, "-inf", "+inf", start=0, num=1, withscores=True)
                pipe.zrange(self.group.keys.delayed, 0, 0, withscores=True)
            for queue in self.queues:
                pipe.zrange(QueueKeys(self.prefix, queue).delayed, 0, 0, withscores=True)
            (seconds, micros), *firsts = pipe.execute()
        now_ms = int(seconds) * 1000 + int(micros) / 1000

        def until(first: list[tuple[bytes, float]]) -> float:
            if not first or first[0][1] == float("inf"):
                return float("inf")
            return max(0.0, (float(first[0][1]) - now_ms) / 1000)

        parked = until(firsts.pop(0)) if self.group is not None else float("inf")
        token_due_s = max(0.005, parked) if parked != float("inf") else parked
        return token_due_s, min((until(first) for first in firsts), default=float("inf"))


class ClusterFetcher(Fetcher):
    def forget_registration(self) -> None:
        """Nothing: the cluster path reserves without a served set; the registry is refreshed on the timer."""

    def reserve(
        self, acks: Sequence[Ack] = (), count: int = 1, while_waiting: Callable[[], Any] | None = None
    ) -> list[Reservation]:
        """Acknowledge each job on its own (other slots), then draw each job in a fresh weighted order."""
        if while_waiting is not None:
            while_waiting()
        for done, bucket in acks:
            self.ack(done, bucket)
        out: list[Reservation] = []
        for _ in range(count):
            got = self._reserve_one()
            if got is None:
                break
            out.append(got)
        return out

    def _reserve_one(self) -> Reservation | None:
        u = self.rng.random()
        holder = self._holder()
        for name in weighted_order(self.served, self.weights, (), self.rng):
            if self.group is not None and name == self.group.name:
                result = self.scripts.run(calls.reserve_tenant(self.group, u, self.retry_after_ms, holder))
                if result:
                    tenant, payload, attempts, lost, member, ready_at = result
                    family = self.families[name]
                    return Reservation(
                        name, payload, int(attempts), tenant.decode(), int(lost), member, _ms(ready_at), family
                    )
                continue
            result = self.scripts.run(calls.reserve_one(QueueKeys(self.prefix, name), self.retry_after_ms, holder))
            if result:
                payload, attempts, lost, member, ready_at = result
                family = self.families[name]
                return Reservation(name, payload, int(attempts), None, int(lost), member, _ms(ready_at), family)
        return None


def _ms(value: bytes | None) -> int | None:
    return int(value) if value else None


def fetcher_for(
    client: RedisClient, settings: WorkerSettings, rng: random.Random | None = None, identity: str | None = None
) -> Fetcher:
    """The strategy for this client: decided here, once, and nowhere else."""
    strategy = ClusterFetcher if is_cluster(client) else StandaloneFetcher
    return strategy(client, settings, rng, identity)


def _member(reply: bytes | str) -> bytes:
    """A reservation member as a script replied it (bytes, or text from a decoding client)."""
    return reply if isinstance(reply, bytes) else reply.encode()
