"""Each Lua script's KEYS and ARGV, built by one typed function (pure: no Redis here).

A script's header comment and its builder below are the two places its arguments are described; the
builders are the only code that lays them out, so the hot path, the cluster path, housekeeping and
the producer can never disagree on an argument's position or unit. Settings reach Lua under the
CRD's names; the one unit change (the quarantine window, seconds in the spec, ms in Lua) is made in
`TenantGroup.argv`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fairway.queue.protocol.job import Job
from fairway.queue.protocol.keys import DEFAULT_PREFIX, GlobalKeys, QueueKeys, TenantGroupKeys
from fairway.resource.spec import TenantSettings, TenantsSpec

FAILED_KEPT = 100_000  # failure records kept per queue or tenant group; the oldest are trimmed
MAINTAIN_BATCH = 200  # due or expired jobs moved back per queue and kind in one housekeeping call
NO_WAIT_BUCKET = -1  # a finished job whose wait is unknown (no enqueue time in its document)


@dataclass(frozen=True)
class ScriptCall:
    script: str
    keys: list[str]
    args: list[Any]


@dataclass(frozen=True)
class TenantGroup:
    """A tenant group as a worker serves it: its settings (the spec's `tenants` block) and its keys."""

    settings: TenantsSpec
    prefix: str = DEFAULT_PREFIX

    @property
    def keys(self) -> TenantGroupKeys:
        return TenantGroupKeys(self.prefix, self.settings.queue_prefix)

    @property
    def name(self) -> str:
        return self.keys.name

    def argv(self) -> list[Any]:
        """The six ARGV entries tenant_lib.lua's `read_group` reads, in its order."""
        quarantine = self.settings.quarantine
        return [
            self.keys.base,
            self.settings.max_consecutive_jobs,
            quarantine.failures,
            quarantine.window_seconds * 1000,
            repr(quarantine.sample_rate),
            repr(quarantine.run_time_share),
        ]


_NO_GROUP_ARGV: list[Any] = ["", 0, 0, 0, "0", "1"]


@dataclass(frozen=True)
class Reservation:
    queue: str  # the served name: a queue, or the tenant group's '@<queuePrefix>'
    payload: bytes  # the job document
    attempts: int  # attempts started, this one included (a lost attempt is given back)
    tenant: str | None = None
    lost: int = 0  # times it was running when its worker vanished (its reservation expired)
    member: bytes = b""  # what the reserved set holds for it, `<job key>\t<tag>`: what settles and renews it
    ready_at_ms: int | None = None  # when it was handed back and ready again (a retry, a lost job); Redis clock
    family: Family | None = None  # its settle calls, decided when it was reserved (see `settles`)

    @property
    def settles(self) -> Family:
        """The calls that settle and renew it: its queue's or its tenant group's, decided once, when it was
        reserved. One made without (a test's) is a plain queue's under the default key prefix."""
        return self.family or QueueFamily(QueueKeys(DEFAULT_PREFIX, self.queue), None)

    def ready_since_ms(self, job: Job) -> int:
        """When this attempt's wait for a slot began: the end of its backoff (or when it was handed back),
        else the document's due time or enqueue. A wait never counts the job's own backoff."""
        return self.ready_at_ms if self.ready_at_ms is not None else job.ready_since_ms


@dataclass(frozen=True)
class Kept:
    """A settled job's result entry (results.py) and how long Redis keeps it: the settle scripts'
    optional last two ARGV."""

    entry: str
    ttl_ms: int

    def argv(self) -> list[Any]:
        return [self.entry, self.ttl_ms]


def _kept(kept: Kept | None, cancelled: bool = False) -> list[Any]:
    """An ack's optional ARGV: the kept result, then `cancelled` for a job that stopped when told (what
    its batch counts it as; docs/batches.md)."""
    argv = kept.argv() if kept is not None else []
    return [*(argv or ["", ""]), "cancelled"] if cancelled else argv


@dataclass(frozen=True)
class QueueFamily:
    """A queue's settle and renew calls (what a reservation of one of its jobs carries)."""

    keys: QueueKeys
    active: str | None  # the active-set key (standalone), which a release re-enters the queue in

    @property
    def reserved(self) -> str:
        return self.keys.reserved

    def ack(self, member: bytes, wait_bucket: int, kept: Kept | None = None, cancelled: bool = False) -> ScriptCall:
        return ack(self.keys, member, kept, cancelled)

    def release(self, member: bytes, delay_ms: int, wait_bucket: int, grace_ms: int | None = None) -> ScriptCall:
        return release(self.keys, self.active, member, delay_ms, grace_ms)

    def fail(self, member: bytes, job_id: str, record: str, wait_bucket: int, kept: Kept | None = None) -> ScriptCall:
        return fail(self.keys, member, job_id, record, kept)


@dataclass(frozen=True)
class GroupFamily:
    """A tenant group's settle and renew calls: the same questions, its own scripts (figures, flights)."""

    group: TenantGroup
    active: str | None

    @property
    def reserved(self) -> str:
        return self.group.keys.reserved

    def ack(self, member: bytes, wait_bucket: int, kept: Kept | None = None, cancelled: bool = False) -> ScriptCall:
        return ack_tenant(self.group.keys, member, wait_bucket, kept, cancelled)

    def release(self, member: bytes, delay_ms: int, wait_bucket: int, grace_ms: int | None = None) -> ScriptCall:
        return release_tenant(self.group, self.active, member, delay_ms, wait_bucket, grace_ms)

    def fail(self, member: bytes, job_id: str, record: str, wait_bucket: int, kept: Kept | None = None) -> ScriptCall:
        return fail_tenant(self.group, member, job_id, record, wait_bucket, kept)


Family = QueueFamily | GroupFamily


def families(prefix: str, queues: Sequence[str], group: TenantGroup | None, active: str | None) -> dict[str, Family]:
    """Served name -> its settle calls, built once per worker (a reservation takes its family by name)."""
    out: dict[str, Family] = {q: QueueFamily(QueueKeys(prefix, q), active) for q in queues}
    if group is not None:
        out[group.name] = GroupFamily(group, active)
    return out


def holder_tag(worker: str, call: int) -> str:
    """The tag a reserve call gives its reservations (lib.lua's lease): the worker, then the call's
    number in that worker, so a reservation names who holds it and no two are alike."""
    return f"{worker.replace(chr(9), ' ')}:{call}"


def _active(active: str | None) -> list[str]:
    """The active-set key as an optional trailing KEYS entry: standalone only."""
    return [] if active is None else [active]


# -- producing ---------------------------------------------------------------------------------------


def _registry(globals_: GlobalKeys | None) -> list[str]:
    """The producer scripts' optional trailing KEYS: the active set and the registry (standalone only)."""
    return [globals_.active, globals_.queues] if globals_ is not None else []


def enqueue(k: QueueKeys, globals_: GlobalKeys | None, document: bytes, delay_ms: int) -> ScriptCall:
    """`globals_` on a standalone Redis only: the active set and the queue registry, in the same step."""
    return ScriptCall("enqueue", [k.ready, k.notify, k.delayed, *_registry(globals_)], [document, delay_ms, k.queue])


def enqueue_tenant(
    g: TenantGroupKeys, globals_: GlobalKeys | None, tenant: str, documents: Sequence[bytes], delay_ms: int
) -> ScriptCall:
    """`globals_` on a standalone Redis only: the active set and the registry, in the same step."""
    return ScriptCall("enqueue_tenant", [g.ring, *_registry(globals_)], [g.base, tenant, delay_ms, g.name, *documents])


@dataclass(frozen=True)
class Whereabouts:
    """Where one job's keys are, as job_status.lua and cancel.lua take them: its job key, the list it
    waits in (its part after the family's base) and the prefix of its `delayed` member."""

    job_key: str
    waits_in: str
    member_prefix: str

    @classmethod
    def of(cls, keys: QueueKeys | TenantGroupKeys, job_id: str, tenant: str | None) -> Whereabouts:
        if isinstance(keys, TenantGroupKeys):
            assert tenant is not None, "a tenant job names its tenant"
            return cls(f"{tenant}\t{job_id}", keys.tenant(tenant)[len(keys.base) :], f"{tenant}\t")
        return cls(job_id, keys.ready[len(keys.base) :], "")


def job_status(
    keys: QueueKeys | TenantGroupKeys, job_id: str, tenant: str | None, document: bytes | None
) -> ScriptCall:
    """Where a job is (job_status.lua); with its document, whether it waits can be told too."""
    at = Whereabouts.of(keys, job_id, tenant)
    argv: list[Any] = [keys.base, job_id, at.job_key]
    if document is not None:
        argv += [at.waits_in, document, at.member_prefix.encode() + document]
    return ScriptCall("job_status", [keys.result(job_id)], argv)


CANCEL_FLAG_MS = 86_400_000  # how long a running job's cancel flag is kept (it is told within seconds)


def cancel(keys: QueueKeys | TenantGroupKeys, job_id: str, tenant: str | None) -> ScriptCall:
    """Cancel one job (cancel.lua): removed if it waits, flagged if it runs."""
    at = Whereabouts.of(keys, job_id, tenant)
    argv = [keys.base, job_id, at.job_key, at.waits_in, at.member_prefix, CANCEL_FLAG_MS]
    return ScriptCall("cancel", [keys.cancel(job_id)], argv)


def tick(
    keys: QueueKeys | TenantGroupKeys,
    globals_: GlobalKeys | None,
    schedule: str,
    tenant: str | None,
    start: int,
    jobs: Sequence[tuple[int, bytes]],
) -> ScriptCall:
    """A schedule's due ticks and their documents (tick.lua): each tick's job written at most once.
    `start`: the tick a schedule not seen before starts after; `globals_` on a standalone Redis only."""
    name = keys.name if isinstance(keys, TenantGroupKeys) else keys.queue
    argv: list[Any] = [keys.base, name, tenant or "", start]
    for tick_s, document in jobs:
        argv += [tick_s, document]
    return ScriptCall("tick", [keys.schedule(schedule), *_registry(globals_)], argv)


def batch_add(
    keys: QueueKeys | TenantGroupKeys,
    globals_: GlobalKeys | None,
    batch_id: str,
    tenant: str | None,
    queue: str,
    open_ttl_ms: int,
    documents: Sequence[bytes],
) -> ScriptCall:
    """Jobs added to a batch (batch.lua), made ready in the same step."""
    return ScriptCall(
        "batch",
        [keys.batch(batch_id), *_registry(globals_)],
        [*_batch_head("add", keys, tenant, queue), open_ttl_ms, *documents],
    )


def batch_seal(
    keys: QueueKeys | TenantGroupKeys,
    batch_id: str,
    tenant: str | None,
    queue: str,
    ttl_ms: int,
    on_complete: bytes | None,
    on_success: bytes | None,
) -> ScriptCall:
    """A batch sealed with its callbacks (batch.lua): they run once every job has ended."""
    argv = [*_batch_head("seal", keys, tenant, queue), ttl_ms, on_complete or b"", on_success or b""]
    return ScriptCall("batch", [keys.batch(batch_id)], argv)


def chain(
    keys: QueueKeys | TenantGroupKeys,
    globals_: GlobalKeys | None,
    chain_id: str,
    tenant: str | None,
    queue: str,
    ttl_ms: int,
    steps: Sequence[Sequence[bytes]],
) -> ScriptCall:
    """A chain's steps (chain.lua): each a batch `<chain id>.<n>`; the first step ready now."""
    name = keys.name if isinstance(keys, TenantGroupKeys) else keys.queue
    argv: list[Any] = [keys.base, name, tenant or "", queue, ttl_ms, chain_id, len(steps)]
    for step in steps:
        argv += [len(step), *step]
    return ScriptCall("chain", [keys.batch(f"{chain_id}.1"), *_registry(globals_)], argv)


def _batch_head(op: str, keys: QueueKeys | TenantGroupKeys, tenant: str | None, queue: str) -> list[Any]:
    name = keys.name if isinstance(keys, TenantGroupKeys) else keys.queue
    return [op, keys.base, name, tenant or "", queue]


def continue_tenant(g: TenantGroupKeys, active: str | None, tenant: str) -> ScriptCall:
    return ScriptCall("continue_tenant", [g.ring, *_active(active)], [g.base, tenant, g.name])


TENANT_FIGURES_BATCH = 500  # tenants per tenant_figures.lua call: a few ms of Redis time each


def demand(prefix: str, served_names: Sequence[str]) -> ScriptCall:
    """The scaling poll's one read per standalone Redis (demand.lua)."""
    return ScriptCall("demand", [], [prefix, *served_names])


def tenant_figures(g: TenantGroupKeys, first_minute: int, last_minute: int, tenants: Sequence[str]) -> ScriptCall:
    return ScriptCall("tenant_figures", [g.seen], [g.base, first_minute, last_minute, *tenants])


# -- reserving ---------------------------------------------------------------------------------------


Ack = tuple[Reservation, int]  # a job that succeeded, and its wait bucket (NO_WAIT_BUCKET when unknown)


@dataclass(frozen=True)
class ReserveCall:
    """reserve.lua's KEYS and the ARGV that stay the same for a worker, built once; `call` adds what
    changes per round trip (the hot path builds no more than that)."""

    keys: list[str]
    fixed: list[Any]

    def call(self, holder: str, acks: Sequence[Ack], draws: Sequence[float]) -> ScriptCall:
        """Acknowledge `acks` and reserve up to len(draws) jobs, each drawn with its own uniform number,
        tagged `holder` (see `holder_tag`)."""
        args = [*self.fixed, holder, len(acks)]
        for done, bucket in acks:
            args += (done.queue, done.member, bucket)
        args.append(len(draws))
        args += map(repr, draws)
        return ScriptCall("reserve", self.keys, args)


def reserve(
    globals_: GlobalKeys, served: tuple[str, str], group: TenantGroup | None, *, retry_after_ms: int, strict: bool
) -> ReserveCall:
    """The standalone hot path's script call for one worker configuration."""
    fixed = [
        globals_.prefix,
        retry_after_ms,
        "1" if strict else "0",
        group.name if group else "",
        *(group.argv() if group else _NO_GROUP_ARGV),
    ]
    return ReserveCall([globals_.active, *served], fixed)


def register(globals_: GlobalKeys, served: tuple[str, str], weights: dict[str, int], ttl_s: int) -> ScriptCall:
    pairs = [item for name, weight in weights.items() for item in (name, weight)]
    return ScriptCall("register", [*served, globals_.queues], [ttl_s, *pairs])


def renew(reserved: str, members: Sequence[bytes], retry_after_ms: int) -> ScriptCall:
    """Renew the leases of these reservations (their members) in one family's reserved set."""
    return ScriptCall("renew", [reserved], [retry_after_ms, *members])


def reserve_one(k: QueueKeys, retry_after_ms: int, holder: str) -> ScriptCall:
    return ScriptCall(
        "reserve_one", [k.ready, k.reserved, k.notify, k.attempts, k.paused, k.leased], [retry_after_ms, holder]
    )


def reserve_tenant(group: TenantGroup, u: float, retry_after_ms: int, holder: str) -> ScriptCall:
    return ScriptCall("reserve_tenant", [group.keys.ring], [*group.argv(), repr(u), retry_after_ms, holder])


# -- settling ----------------------------------------------------------------------------------------


def ack(k: QueueKeys, member: bytes, kept: Kept | None = None, cancelled: bool = False) -> ScriptCall:
    return ScriptCall("ack", [k.reserved, k.attempts, k.leased], [member, *_kept(kept, cancelled)])


def ack_tenant(
    g: TenantGroupKeys, member: bytes, wait_bucket: int, kept: Kept | None = None, cancelled: bool = False
) -> ScriptCall:
    return ScriptCall("ack_tenant", [g.reserved], [g.base, member, wait_bucket, *_kept(kept, cancelled)])


def release(k: QueueKeys, active: str | None, member: bytes, delay_ms: int, grace_ms: int | None = None) -> ScriptCall:
    """A retry after its backoff; with `grace_ms`, a hand-back (no try spent: this worker does not know
    the handler), which returns 2 instead once the job's grace from its first hand-back is over."""
    return ScriptCall(
        "release",
        [k.reserved, k.delayed, k.ready, k.notify, k.leased, k.attempts, *_active(active)],
        [member, delay_ms, k.queue, *_grace(grace_ms)],
    )


def release_tenant(
    group: TenantGroup,
    active: str | None,
    member: bytes,
    delay_ms: int,
    wait_bucket: int,
    grace_ms: int | None = None,
) -> ScriptCall:
    return ScriptCall(
        "release_tenant",
        [group.keys.reserved, *_active(active)],
        [*group.argv(), member, delay_ms, wait_bucket, group.name, *_grace(grace_ms)],
    )


HANDED_BACK, GRACE_OVER = 1, 2  # what a hand-back's release call returns (0: the lease was gone)


def _grace(grace_ms: int | None) -> list[int]:
    return [] if grace_ms is None else [grace_ms]


def fail(k: QueueKeys, member: bytes, job_id: str, record: str, kept: Kept | None = None) -> ScriptCall:
    return ScriptCall(
        "fail",
        [k.reserved, k.attempts, k.failed, k.failed_index, k.leased],
        [member, job_id, record, FAILED_KEPT, *_kept(kept)],
    )


def fail_tenant(
    group: TenantGroup, member: bytes, job_id: str, record: str, wait_bucket: int, kept: Kept | None = None
) -> ScriptCall:
    return ScriptCall(
        "fail_tenant",
        [group.keys.reserved],
        [*group.argv(), member, job_id, record, FAILED_KEPT, wait_bucket, *_kept(kept)],
    )


# -- housekeeping ------------------------------------------------------------------------------------


def maintain(k: QueueKeys, active: str | None) -> ScriptCall:
    return ScriptCall(
        "maintain",
        [k.ready, k.reserved, k.delayed, k.notify, k.attempts, k.leased, *_active(active)],
        [MAINTAIN_BATCH, k.queue],
    )


def maintain_tenant(group: TenantGroup, active: str | None) -> ScriptCall:
    g = group.keys
    return ScriptCall("maintain_tenant", [g.ring, *_active(active)], [*group.argv(), MAINTAIN_BATCH, g.name])


# -- tenant settings ---------------------------------------------------------------------------------

SETTING_FIELDS = ("weight", "max_in_flight", "rate", "burst")  # tenant_lib.lua's SETTING_FIELDS, in its order


def settings_fields(settings: TenantSettings) -> str:
    """`<weight>,<maxInFlight>,<rate>,<burst>` as tenant_lib.lua reads them; a field not set is empty."""
    return ",".join("" if (v := getattr(settings, f)) is None else repr(v) for f in SETTING_FIELDS)


def set_tenant_settings(g: TenantGroupKeys, tenant: str, settings: TenantSettings) -> ScriptCall:
    return ScriptCall("tenant_settings", [g.tset], [g.base, "set", tenant, settings_fields(settings)])


def reset_tenant_settings(g: TenantGroupKeys, tenant: str) -> ScriptCall:
    return ScriptCall("tenant_settings", [g.tset], [g.base, "reset", tenant])


def configure_tenants(
    g: TenantGroupKeys, defaults: TenantSettings, overrides: Sequence[tuple[str, TenantSettings]]
) -> ScriptCall:
    pairs = [part for tenant, settings in overrides for part in (tenant, settings_fields(settings))]
    return ScriptCall("tenant_settings", [g.tset], [g.base, "configure", settings_fields(defaults), *pairs])
