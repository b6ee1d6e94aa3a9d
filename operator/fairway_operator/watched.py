"""What the operator's watches last saw: every supervisor, and every child (pool Deployment, worker
ConfigMap) by its owning supervisor. Passes read these instead of the API server.

Not kopf indexes: kopf holds every object's handlers until every indexed object has been indexed, and
each object's worker waits on one shared condition, so a start over thousands of objects costs time
quadratic in their number (minutes at 1,000 supervisors). Instead the children are listed once at
start-up (`fill`), before any handler runs, and kept current by the event handlers. An entry from that
listing that no watch event confirms within CONFIRM_WITHIN_S (a child deleted between the listing and
the watch) is dropped and its supervisor passed again (`unconfirmed`).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fairway.resource.spec import KIND

CONFIRM_WITHIN_S = 120.0

SupervisorKey = tuple[str, str]  # (namespace, name)
ChildKey = tuple[str, str, str]  # (namespace, kind, name)


def kept(body: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """A child as kept: what drift checks compare and the periodic loop observes (no managedFields, no
    status beyond the ready counts)."""
    meta = body.get("metadata") or {}
    keep = ("name", "namespace", "labels", "annotations", "ownerReferences")
    out: dict[str, Any] = {"kind": kind, "metadata": {k: copy.deepcopy(meta.get(k)) for k in keep}}
    if kind == "ConfigMap":
        out["data"] = copy.deepcopy(dict(body.get("data") or {}))
    else:
        status = body.get("status") or {}
        out["spec"] = copy.deepcopy(dict(body.get("spec") or {}))
        out["status"] = {k: status.get(k) for k in ("availableReplicas", "readyReplicas")}
    return out


def supervisor_key(body: Mapping[str, Any]) -> SupervisorKey:
    meta = body["metadata"]
    return (meta.get("namespace", "default"), meta["name"])


def owner_of(child: Mapping[str, Any]) -> Mapping[str, Any] | None:
    refs = (child.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if r.get("kind") == KIND), None)


class Watched:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.supervisors: dict[SupervisorKey, dict[str, Any]] = {}
        self._children: dict[ChildKey, dict[str, Any]] = {}
        self._by_owner: dict[SupervisorKey, set[ChildKey]] = {}
        self._owner_uid: dict[ChildKey, Any] = {}  # (read once per event, not on every lookup)
        self._unconfirmed: dict[ChildKey, float] = {}
        self._lock = threading.Lock()
        self._clock = clock

    # -- supervisors -----------------------------------------------------------------------------

    def supervisor_seen(self, body: Mapping[str, Any]) -> None:
        """Kept whole but for managedFields, which a real API server adds to every object (a record of
        every manager's fields, often larger than the spec) and nothing here reads."""
        meta = {k: v for k, v in body["metadata"].items() if k != "managedFields"}
        self.supervisors[supervisor_key(body)] = copy.deepcopy({**body, "metadata": meta})

    def supervisor_gone(self, key: SupervisorKey) -> None:
        self.supervisors.pop(key, None)

    # -- children --------------------------------------------------------------------------------

    def fill(self, listed: Iterable[Mapping[str, Any]]) -> None:
        """The children as listed at start-up (each with its `kind`), until watch events confirm them."""
        due = self._clock() + CONFIRM_WITHIN_S
        for body in listed:
            key = self.child_seen(body, str(body["kind"]))
            if key is not None:
                with self._lock:
                    self._unconfirmed[key] = due

    def child_seen(self, body: Mapping[str, Any], kind: str) -> ChildKey | None:
        owner = owner_of(body)
        if owner is None:
            return None
        meta = body["metadata"]
        key = (str(meta["namespace"]), kind, str(meta["name"]))
        with self._lock:
            self._forget(key)
            self._children[key] = kept(body, kind)
            self._owner_uid[key] = owner.get("uid")
            self._by_owner.setdefault((key[0], str(owner["name"])), set()).add(key)
        return key

    def child_gone(self, namespace: str, kind: str, name: str) -> None:
        with self._lock:
            self._forget((namespace, kind, name))

    def _forget(self, key: ChildKey) -> None:
        self._unconfirmed.pop(key, None)
        self._owner_uid.pop(key, None)
        child = self._children.pop(key, None)
        owner = owner_of(child) if child else None
        if owner is not None:
            siblings = self._by_owner.get((key[0], str(owner["name"])))
            if siblings is not None:
                siblings.discard(key)
                if not siblings:
                    del self._by_owner[(key[0], str(owner["name"]))]

    def owned(self, body: Mapping[str, Any], kind: str | None = None) -> list[dict[str, Any]]:
        """This very supervisor's children (owner uid matching), optionally of one kind."""
        meta = body["metadata"]
        uid = meta.get("uid")
        with self._lock:
            keys = sorted(self._by_owner.get((meta.get("namespace", "default"), meta["name"]), ()))
            return [self._children[k] for k in keys if kind in (None, k[1]) and self._owner_uid[k] == uid]

    def unconfirmed(self) -> list[SupervisorKey]:
        """Drop the start-up entries no watch event confirmed in time; their supervisors, to pass again."""
        now = self._clock()
        owners: set[SupervisorKey] = set()
        with self._lock:
            for key in [k for k, due in self._unconfirmed.items() if due <= now]:
                owner = owner_of(self._children.get(key) or {})
                if owner is not None:
                    owners.add((key[0], str(owner["name"])))
                self._forget(key)
        return sorted(owners)
