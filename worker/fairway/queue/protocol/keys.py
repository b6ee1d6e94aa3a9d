"""Every Redis key name Fairway uses, in one table: Python derives its key names from it, the Lua
sources name parts as `QK.ready`/`GK.ring`, which the loader replaces with the literal part from this
table, and docs/protocol.md quotes it (a test compares).

All keys of one queue share the hash tag `{<queue>}`, and all keys of one tenant group share
`{tenants:<queuePrefix>}`, so every per-queue or per-group script is legal on Redis Cluster. The few
global keys (the active-queue index, the queue registry, served sets) are only touched on a
standalone Redis, where slots do not exist. The price of one tag per tenant group: a whole group
lives on one shard; outgrow it by splitting tenants across several groups (queue prefixes).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

# The naming rules keys follow live with the other names (resource/names.py); re-exported here, where
# every key is built from them.
from fairway.resource.names import DEFAULT_PREFIX as DEFAULT_PREFIX
from fairway.resource.names import SERVED_NAME_MARK as SERVED_NAME_MARK
from fairway.resource.names import is_group_name as is_group_name
from fairway.resource.names import served_name_of_group as served_name_of_group

# The attempts-hash field `<job key>` + this: when a handed-back job was ready again (ms, Redis clock);
# lib.lua's READY, which writes it (a unit test keeps the two equal).
READY_FIELD = "\tready"


@dataclass(frozen=True)
class KeyPart:
    part: str  # what follows the hash-tagged base
    type: str
    contents: str


QUEUE_KEYS: tuple[KeyPart, ...] = (
    KeyPart("ready", "list", "job documents, oldest at the head"),
    KeyPart(
        "notify",
        "list",
        "one token (`1`) per ready job, and at most one more when a delayed job came due sooner than any "
        "before it; idle workers block on these",
    ),
    KeyPart(
        "reserved",
        "sorted set",
        "`<job id>\\t<tag>` -> lease deadline (ms, Redis clock); the tag names the holding worker",
    ),
    KeyPart("delayed", "sorted set", "document -> when it is due (ms, Redis clock)"),
    KeyPart(
        "attempts",
        "hash",
        "job id -> attempts started (+ 2^20 x times lost); `<job id>\\tready` -> when it was ready again (ms); "
        "`<job id>\\thanded` -> when a worker first handed it back, not knowing its handler (ms); "
        "`<job id>\\tunique` -> the name of its `unique:` key, which settling it releases",
    ),
    KeyPart("leased", "hash", "job id -> `<tag>\\t<document>`, for each reservation: one per job"),
    KeyPart("failed", "hash", "job id -> failure record (JSON: payload, exception, message, traceback, attempts)"),
    KeyPart("failed_index", "sorted set", "job id -> failed at (ms); the newest 100,000 are kept"),
    KeyPart("paused", "string", "exists while the queue is paused"),
    KeyPart("runtime", "hash", "per minute: total run time (ms) and jobs, for the auto-balancer; 15 minutes"),
    KeyPart("progress:", "string", "`progress:<job id>`: the job's last progress report (JSON); expires after a day"),
    KeyPart(
        "unique:",
        "string",
        "`unique:<unique key>` -> the id of the job holding it while it waits or runs; expires after `unique_for`",
    ),
    KeyPart(
        "result:",
        "list",
        "`result:<job id>`: its result entry (JSON, docs/results.md), alone in the list; kept `result_ttl`",
    ),
    KeyPart(
        "cancel:",
        "string",
        "`cancel:<job id>`: exists while a running job is asked to stop (docs/cancel.md); its worker tells "
        "it at the next lease renewal",
    ),
    KeyPart(
        "schedule:",
        "hash",
        "`schedule:<name>`: a schedule's ticks (docs/schedules.md): `last` handled, `ran` (last with a job), `paused`",
    ),
    KeyPart(
        "batch:",
        "hash",
        "`batch:<batch id>`: a batch's counts (total, pending, succeeded, failed, cancelled), sealed, callbacks, "
        "done_at (docs/batches.md); kept `ttl` after it is done",
    ),
)

TENANT_GROUP_KEYS: tuple[KeyPart, ...] = (
    KeyPart("ring", "list", "active healthy tenant ids, in turn order"),
    KeyPart("qring", "list", "active quarantined tenant ids (the slow lane)"),
    KeyPart("quarantined", "set", "quarantined tenant ids"),
    KeyPart("qreason", "hash", "quarantined tenant id -> why: `failures` or `slow` (its share of the run time)"),
    KeyPart("state", "hash", "cur/n: the ring's head and jobs it has had in a row; qcur/qn: the same for qring"),
    KeyPart("t:", "list", "`t:<id>`: the tenant's ready job documents"),
    KeyPart("reserved", "sorted set", "`<tenant id>\\t<job id>\\t<tag>` -> lease deadline (ms)"),
    KeyPart("delayed", "sorted set", "`<id>\\t<document>` -> due time (ms)"),
    KeyPart("notify", "list", "one token per ready job (its length is the group's ready jobs, for the planner)"),
    KeyPart(
        "wake", "list", "at most one token: a delayed job came due sooner than any before it; idle workers block on it"
    ),
    KeyPart(
        "attempts",
        "hash",
        "`<tenant id>\\t<job id>` -> attempts started (+ 2^20 x times lost); with `\\tready` -> when it was "
        "ready again (ms); with `\\thanded` -> when it was first handed back (ms); with `\\tunique` -> the name "
        "of its `unique:` key",
    ),
    KeyPart("leased", "hash", "`<tenant id>\\t<job id>` -> `<tag>\\t<document>`, for each reservation"),
    KeyPart("inflight", "hash", "tenant id -> jobs reserved now (what `maxInFlight` caps)"),
    KeyPart(
        "tset",
        "hash",
        "tenant id -> its run-time settings `<weight>,<maxInFlight>,<rate>,<burst>` (empty = not set), "
        "written by `fairway tenant set`; they win over `tconf`",
    ),
    KeyPart(
        "tconf",
        "hash",
        "tenant id -> the resource's override (`spec.tenants.overrides`), `*` -> `spec.tenants.defaults`, "
        "same form; written by the operator",
    ),
    KeyPart("tmeta", "hash", "`any`: 1 while any setting exists; `wmax`: the highest weight in effect"),
    KeyPart("deficit", "hash", "tenant id -> jobs its weight has earned and not yet taken (deficit round-robin)"),
    KeyPart("bucket", "hash", "tenant id -> `<tokens> <ms>`: its rate's token bucket as of that time (Redis clock)"),
    KeyPart(
        "parked",
        "sorted set",
        "tenant id -> when it may be served again (ms; `inf` = when one of its jobs settles): tenants at "
        "their cap or out of tokens, out of the ring with their jobs kept",
    ),
    KeyPart("limited", "hash", "`<tenant id>\\tcapped` / `\\tthrottled` -> times it was skipped at its cap or rate"),
    KeyPart("fails:", "hash", "`fails:<id>`: failure bucket (window / 10) -> failed attempts"),
    KeyPart(
        "busy:",
        "hash",
        "`busy:<10 s bucket>`: tenant id -> ms its jobs were in flight (slot-ms), `*` -> the group's, "
        "`@` -> ms counted; 70 s",
    ),
    KeyPart("stats:", "hash", "`stats:<id>:<minute>`: c (completed), f (failed), w<k> (wait histogram)"),
    KeyPart("seen", "sorted set", "tenant id -> last activity (ms), for listing tenants"),
    KeyPart("failed", "hash", "job id -> failure record (JSON)"),
    KeyPart("failed_index", "sorted set", "job id -> failed at (ms)"),
    KeyPart("paused", "string", "exists while the group is paused"),
    KeyPart(
        "paused_tenants", "set", "tenant ids paused one by one (`fairway pause --tenant`): out of the ring, jobs kept"
    ),
    KeyPart("runtime", "hash", "per minute: total run time (ms) and jobs, for the auto-balancer"),
    KeyPart("progress:", "string", "`progress:<job id>`: the job's last progress report (JSON); expires after a day"),
    KeyPart(
        "unique:",
        "string",
        "`unique:<tenant id>:<unique key>` -> the id of the tenant's job holding it while it waits or runs; "
        "expires after `unique_for`",
    ),
    KeyPart(
        "result:",
        "list",
        "`result:<job id>`: a tenant job's result entry (JSON, docs/results.md), alone in the list; kept `result_ttl`",
    ),
    KeyPart(
        "cancel:", "string", "`cancel:<job id>`: exists while a running tenant job is asked to stop (docs/cancel.md)"
    ),
    KeyPart(
        "schedule:",
        "hash",
        "`schedule:<name>`: a tenant schedule's ticks (docs/schedules.md): `last` handled, `ran`, `paused`",
    ),
    KeyPart(
        "batch:",
        "hash",
        "`batch:<batch id>`: a tenant batch's counts, sealed, callbacks, done_at (docs/batches.md)",
    ),
)

GLOBAL_KEYS: tuple[KeyPart, ...] = (
    KeyPart("active", "set", "standalone Redis only: served names that may hold ready jobs"),
    KeyPart("queues", "set", "every served name enqueued to or served: queues, and tenant groups as `@<queuePrefix>`"),
    KeyPart("workers", "hash", "`<host>:<pid>` -> a live worker's served names, slots, busy slots, last beat (ms)"),
    KeyPart(
        "served:",
        "set + hash",
        "`served:<digest>:queues` and `:weights`: a worker configuration's served names and weights",
    ),
    KeyPart(
        "schedules",
        "hash",
        "schedule name -> its declaration and where its state is (JSON), written by its tickers, read by "
        "`fairway schedules`",
    ),
    KeyPart(
        "batches",
        "sorted set",
        "`<served name>\\t<batch id>` -> when it was opened (ms): the batches `fairway batches` lists",
    ),
)


class _Part:
    """A key of a keyed family: `<base><part>`, where `part` must be in the family's table."""

    def __init__(self, table: tuple[KeyPart, ...], part: str) -> None:
        if part not in {k.part for k in table}:
            raise ValueError(f"key part {part!r} is not in the key table")
        self.part = part

    def __get__(self, obj: Any, owner: Any = None) -> str:
        base: str = obj.base
        return base + self.part


def lua_prelude() -> str:
    """The comment that heads every script: where its key parts (written `QK.ready`, `GK.ring` in the
    sources, replaced by the loader with the literal part) come from."""
    return "-- Key parts are the table in fairway/queue/protocol/keys.py, spliced in as literals by the loader."


@dataclass(frozen=True)
class QueueKeys:
    prefix: str
    queue: str

    @property
    def base(self) -> str:
        return f"{self.prefix}:{{{self.queue}}}:"

    ready = _Part(QUEUE_KEYS, "ready")
    notify = _Part(QUEUE_KEYS, "notify")
    reserved = _Part(QUEUE_KEYS, "reserved")
    delayed = _Part(QUEUE_KEYS, "delayed")
    attempts = _Part(QUEUE_KEYS, "attempts")
    leased = _Part(QUEUE_KEYS, "leased")
    failed = _Part(QUEUE_KEYS, "failed")
    failed_index = _Part(QUEUE_KEYS, "failed_index")
    paused = _Part(QUEUE_KEYS, "paused")
    runtime = _Part(QUEUE_KEYS, "runtime")

    def progress(self, job_id: str) -> str:
        return f"{self.base}progress:{job_id}"

    def unique(self, key: str) -> str:
        return f"{self.base}unique:{key}"

    def result(self, job_id: str) -> str:
        return f"{self.base}result:{job_id}"

    def cancel(self, job_id: str) -> str:
        return f"{self.base}cancel:{job_id}"

    def schedule(self, name: str) -> str:
        return f"{self.base}schedule:{name}"

    def batch(self, batch_id: str) -> str:
        return f"{self.base}batch:{batch_id}"


@dataclass(frozen=True)
class TenantGroupKeys:
    """Keys of one tenant group: all share the hash tag `{tenants:<queuePrefix>}`, so one cluster slot."""

    prefix: str
    queue_prefix: str

    @property
    def base(self) -> str:
        """G: the prefix the Lua scripts append the key parts to."""
        return f"{self.prefix}:{{tenants:{self.queue_prefix}}}:"

    @property
    def name(self) -> str:
        """The group's served name (in served sets, the active set, failure records): '@<queuePrefix>'."""
        return served_name_of_group(self.queue_prefix)

    ring = _Part(TENANT_GROUP_KEYS, "ring")
    qring = _Part(TENANT_GROUP_KEYS, "qring")
    quarantined = _Part(TENANT_GROUP_KEYS, "quarantined")
    qreason = _Part(TENANT_GROUP_KEYS, "qreason")
    state = _Part(TENANT_GROUP_KEYS, "state")
    reserved = _Part(TENANT_GROUP_KEYS, "reserved")
    delayed = _Part(TENANT_GROUP_KEYS, "delayed")
    notify = _Part(TENANT_GROUP_KEYS, "notify")
    wake = _Part(TENANT_GROUP_KEYS, "wake")
    attempts = _Part(TENANT_GROUP_KEYS, "attempts")
    leased = _Part(TENANT_GROUP_KEYS, "leased")
    inflight = _Part(TENANT_GROUP_KEYS, "inflight")
    tset = _Part(TENANT_GROUP_KEYS, "tset")
    tconf = _Part(TENANT_GROUP_KEYS, "tconf")
    tmeta = _Part(TENANT_GROUP_KEYS, "tmeta")
    deficit = _Part(TENANT_GROUP_KEYS, "deficit")
    bucket = _Part(TENANT_GROUP_KEYS, "bucket")
    parked = _Part(TENANT_GROUP_KEYS, "parked")
    limited = _Part(TENANT_GROUP_KEYS, "limited")
    failed = _Part(TENANT_GROUP_KEYS, "failed")
    failed_index = _Part(TENANT_GROUP_KEYS, "failed_index")
    paused = _Part(TENANT_GROUP_KEYS, "paused")
    paused_tenants = _Part(TENANT_GROUP_KEYS, "paused_tenants")
    seen = _Part(TENANT_GROUP_KEYS, "seen")
    runtime = _Part(TENANT_GROUP_KEYS, "runtime")

    def tenant(self, tenant_id: str) -> str:
        return f"{self.base}t:{tenant_id}"

    def stats(self, tenant_id: str, minute: int) -> str:
        return f"{self.base}stats:{tenant_id}:{minute}"

    def progress(self, job_id: str) -> str:
        return f"{self.base}progress:{job_id}"

    def unique(self, tenant_id: str, key: str) -> str:
        return f"{self.base}unique:{tenant_id}:{key}"

    def result(self, job_id: str) -> str:
        return f"{self.base}result:{job_id}"

    def cancel(self, job_id: str) -> str:
        return f"{self.base}cancel:{job_id}"

    def schedule(self, name: str) -> str:
        return f"{self.base}schedule:{name}"

    def batch(self, batch_id: str) -> str:
        return f"{self.base}batch:{batch_id}"


@dataclass(frozen=True)
class GlobalKeys:
    prefix: str = DEFAULT_PREFIX

    @property
    def base(self) -> str:
        return f"{self.prefix}:"

    active = _Part(GLOBAL_KEYS, "active")
    queues = _Part(GLOBAL_KEYS, "queues")
    workers = _Part(GLOBAL_KEYS, "workers")
    schedules = _Part(GLOBAL_KEYS, "schedules")
    batches = _Part(GLOBAL_KEYS, "batches")

    def served(self, queues: tuple[str, ...], weights: tuple[int, ...]) -> tuple[str, str]:
        """(set of served names, hash name -> weight or rank) registered by workers of one config."""
        digest = hashlib.sha1(repr((queues, weights)).encode()).hexdigest()[:16]
        return f"{self.base}served:{digest}:queues", f"{self.base}served:{digest}:weights"


def family_keys(prefix: str, served_name: str) -> QueueKeys | TenantGroupKeys:
    """A queue's keys, or a tenant group's when `served_name` is '@<queuePrefix>'."""
    if is_group_name(served_name):
        return TenantGroupKeys(prefix, served_name[len(SERVED_NAME_MARK) :])
    return QueueKeys(prefix, served_name)
