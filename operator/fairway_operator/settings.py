"""Where kopf keeps its own state, decided once for the operator and its tests.

kopf's default progress storage also writes `status.kopf`, which the API server prunes because the
CRD's status schema does not declare it, so kopf's bookkeeping would vanish silently. Everything
kopf keeps therefore lives in annotations under our own prefix, and the status holds only the
fields `fairway.status` declares.

The operator's handlers are all event handlers, for which kopf stores nothing on the object and needs
no diff base (the last-handled essence that change handlers diff against). kopf would still build that
essence, a deep copy of the whole object, on every watch event; `NoDiffBase` skips it. A change, resume,
timer or daemon handler would need the real storage back (a unit test holds the operator to event
handlers only).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import kopf

ANNOTATION_PREFIX = "fairway.dev"


class NoDiffBase(kopf.DiffBaseStorage):
    """No diff base: nothing is built, fetched or stored (event handlers get no old/new/diff)."""

    def build(self, *, body: kopf.Body, extra_fields: Iterable[Any] | None = None) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        return None


def configure_persistence(settings: kopf.OperatorSettings) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=ANNOTATION_PREFIX)
    settings.persistence.diffbase_storage = NoDiffBase()
    # No handler of ours needs a finalizer (deletion must never hang); name it ours all the same.
    settings.persistence.finalizer = f"{ANNOTATION_PREFIX}/finalizer"


def configure_scanning(settings: kopf.OperatorSettings) -> None:
    """Watching named namespaces, kopf would also list and watch every Namespace and CRD to follow them
    coming and going, which the chart's Roles cannot grant (they are cluster-scoped): it only logs a
    warning and carries on. Scanning is therefore off unless every namespace is watched."""
    settings.scanning.disabled = not settings.peering.clusterwide
