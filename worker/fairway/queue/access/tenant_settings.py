"""Per-tenant weight, in-flight cap and rate, kept in Redis where every worker's pop reads them.

Three layers, each field on its own: run-time settings (`fairway tenant set`, the dashboard, the
Python client) win over the resource's override for the tenant (`spec.tenants.overrides`), which wins
over the resource's defaults (`spec.tenants.defaults`), which win over the built-in defaults (weight
1, no cap, no rate). The operator writes the resource's two layers (`configure`, as it writes
pausedQueues); tenant_settings.lua keeps what every pop reads of them (`tmeta`) current.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fairway.queue.connection import RedisClient
from fairway.queue.protocol import calls
from fairway.queue.protocol.job import check_tenant_id
from fairway.queue.protocol.keys import DEFAULT_PREFIX, TenantGroupKeys
from fairway.queue.protocol.scripts import Scripts
from fairway.resource.names import DEFAULT_WEIGHT
from fairway.resource.spec import TenantOverride, TenantSettings

RUN_TIME, OVERRIDE, DEFAULTS, BUILT_IN = "run-time", "override", "defaults", "built-in"


def decode(raw: bytes | str | None) -> TenantSettings:
    """The stored form (`<weight>,<maxInFlight>,<rate>,<burst>`) back to settings; unreadable parts unset."""
    if raw is None:
        return TenantSettings()
    text = raw.decode() if isinstance(raw, bytes) else raw
    parts = [*text.split(","), "", "", "", ""][:4]
    values: dict[str, Any] = {}
    for name, part in zip(calls.SETTING_FIELDS, parts, strict=True):
        try:
            values[name] = None if part == "" else (float(part) if name == "rate" else int(float(part)))
        except ValueError:
            values[name] = None
    return TenantSettings.model_construct(**values)


def checked_settings(labels: Mapping[str, str] | None = None, /, **given: Any) -> TenantSettings:
    """TenantSettings from keyword values (None = not given), checked by the spec's own limits; a
    refusal is one ValueError naming the field ("weight: must be at least 1, not 0"), or its label
    in `labels` (the CLI passes its flags: "--weight: ...")."""
    from pydantic import ValidationError

    from fairway.resource.wording import plain_message

    try:
        return TenantSettings(**{k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0])
        raise ValueError(f"{(labels or {}).get(field, field)}: {plain_message(error)}") from None


@dataclass(frozen=True)
class TenantView:
    """One tenant's settings in effect (and where each came from) and what its limits are doing now."""

    group: str  # the group's queue prefix
    tenant: str
    weight: int
    max_in_flight: int | None
    rate: float | None
    burst: int | None
    sources: dict[str, str]  # field -> run-time | override | defaults | built-in
    in_flight: int
    parked_until_ms: float | None  # parked: at its cap (inf) or out of tokens until then; None = not parked
    capped: int  # times skipped at its cap
    throttled: int  # times skipped for want of a rate token
    quarantined: str | None = None  # why it is in the slow lane: "failures" or "slow"; None = healthy
    paused: bool = False  # `fairway pause --tenant`: its jobs wait, the group's other tenants go on

    def to_json(self) -> dict[str, Any]:
        """Plain data, keys in snake_case as every `--json` of the CLI (`fairway tenants --json` too)."""
        parked = self.parked_until_ms
        return {
            "group": self.group,
            "tenant": self.tenant,
            "weight": self.weight,
            "max_in_flight": self.max_in_flight,
            "rate": self.rate,
            "burst": self.burst,
            "sources": dict(self.sources),
            "in_flight": self.in_flight,
            "paused": self.paused,
            "parked": None if parked is None else ("cap" if parked == float("inf") else "rate"),
            "capped": self.capped,
            "throttled": self.throttled,
            "quarantined": self.quarantined,
        }


def effective(
    run_time: TenantSettings, override: TenantSettings, defaults: TenantSettings
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each field from the first layer that sets it (tenant_lib.lua's settings_of, in Python)."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name in calls.SETTING_FIELDS:
        for source, layer in ((RUN_TIME, run_time), (OVERRIDE, override), (DEFAULTS, defaults)):
            if getattr(layer, name) is not None:
                values[name], sources[name] = getattr(layer, name), source
                break
        else:
            values[name], sources[name] = None, BUILT_IN
    if values["weight"] is None:
        values["weight"] = DEFAULT_WEIGHT
    if values["rate"] is not None and values["burst"] is None:
        values["burst"] = max(1, int(values["rate"]))
    return values, sources


class TenantSettingsStore:
    def __init__(self, client: RedisClient, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self.prefix = prefix
        self.scripts = Scripts(client)

    def keys(self, queue_prefix: str) -> TenantGroupKeys:
        return TenantGroupKeys(self.prefix, queue_prefix)

    def set(self, queue_prefix: str, tenant: str, settings: TenantSettings) -> None:
        """Change the fields `settings` sets (the others stay as they are) for one tenant, at run time."""
        self.scripts.run(calls.set_tenant_settings(self.keys(queue_prefix), check_tenant_id(tenant), settings))

    def reset(self, queue_prefix: str, tenant: str) -> None:
        """Drop the tenant's run-time settings: the resource's apply again."""
        self.scripts.run(calls.reset_tenant_settings(self.keys(queue_prefix), check_tenant_id(tenant)))

    def configure(self, queue_prefix: str, defaults: TenantSettings, overrides: Sequence[TenantOverride]) -> bool:
        """The resource's defaults and overrides, replacing the ones written before (the operator);
        False when Redis held exactly these already (nothing written, no parked tenant disturbed)."""
        pairs = [(o.tenant, o) for o in overrides]
        return bool(self.scripts.run(calls.configure_tenants(self.keys(queue_prefix), defaults, pairs)))

    def configured(self, queue_prefix: str) -> tuple[TenantSettings, dict[str, TenantSettings]]:
        """The resource's layers as Redis holds them: (defaults, overrides by tenant)."""
        raw = self.client.hgetall(self.keys(queue_prefix).tconf)
        table = {(k.decode() if isinstance(k, bytes) else str(k)): decode(v) for k, v in raw.items()}
        return table.pop("*", TenantSettings()), table

    def show(self, queue_prefix: str, tenant: str) -> TenantView:
        """One tenant's settings in effect and its limits' state (a tenant never seen shows the defaults)."""
        check_tenant_id(tenant)
        g = self.keys(queue_prefix)
        with self.client.pipeline(transaction=False) as pipe:
            pipe.hget(g.tset, tenant)
            pipe.hmget(g.tconf, [tenant, "*"])
            pipe.hget(g.inflight, tenant)
            pipe.zscore(g.parked, tenant)
            pipe.hmget(g.limited, [f"{tenant}\tcapped", f"{tenant}\tthrottled"])
            pipe.sismember(g.quarantined, tenant)
            pipe.hget(g.qreason, tenant)
            pipe.sismember(g.paused_tenants, tenant)
            run_time, (override, defaults), in_flight, parked, (capped, throttled), held, why, paused = pipe.execute()
        values, sources = effective(decode(run_time), decode(override), decode(defaults))
        return TenantView(
            queue_prefix,
            tenant,
            sources=sources,
            in_flight=max(0, int(in_flight or 0)),
            parked_until_ms=None if parked is None else float(parked),
            capped=int(capped or 0),
            throttled=int(throttled or 0),
            quarantined=(why.decode() if why else "failures") if held else None,
            paused=bool(paused),
            **values,
        )
