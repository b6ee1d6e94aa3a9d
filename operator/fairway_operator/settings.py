"""Where kopf keeps its own state, decided once for the operator and its tests.

kopf's default progress storage also writes `status.kopf`, which the API server prunes because the
CRD's status schema does not declare it, so kopf's bookkeeping would vanish silently. Everything
kopf keeps therefore lives in annotations under our own prefix, and the status holds only the
fields `fairway.status` declares. (The operator's handlers are all event handlers, for which kopf
stores nothing on the object; a change handler, were one added, would keep its state there.)
"""

from __future__ import annotations

import kopf

ANNOTATION_PREFIX = "fairway.dev"


def configure_persistence(settings: kopf.OperatorSettings) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=ANNOTATION_PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=ANNOTATION_PREFIX,
        key="last-handled-configuration",
        ignored_fields=["status"],
    )
    # No handler of ours needs a finalizer (deletion must never hang); name it ours all the same.
    settings.persistence.finalizer = f"{ANNOTATION_PREFIX}/finalizer"


def configure_scanning(settings: kopf.OperatorSettings) -> None:
    """Watching named namespaces, kopf would also list and watch every Namespace and CRD to follow them
    coming and going, which the chart's Roles cannot grant (they are cluster-scoped): it only logs a
    warning and carries on. Scanning is therefore off unless every namespace is watched."""
    settings.scanning.disabled = not settings.peering.clusterwide
