"""Stable, DNS-safe names and label values, at most 63 characters, however long the inputs.

A name that had to change (case, characters, length) gets a short hash of the original, so two
different queues never map to the same Deployment (`Emails` vs `emails`, `a.b` vs `a-b`).
"""

from __future__ import annotations

import hashlib
import re

MAX = 63
_INVALID = re.compile(r"[^a-z0-9-]+")


def dns_label(*parts: str) -> str:
    original = "-".join(parts)
    cleaned = _INVALID.sub("-", original.lower()).strip("-")
    cleaned = re.sub(r"-{2,}", "-", cleaned)
    if cleaned == original and len(cleaned) <= MAX:
        return cleaned
    digest = hashlib.sha1(original.encode()).hexdigest()[:8]
    head = cleaned[: MAX - len(digest) - 1].rstrip("-")
    return f"{head}-{digest}" if head else digest


def pool_label(pool: str) -> str:
    """Label value for a pool: pools are queue names or 'tenants' or 'all'."""
    return dns_label(pool)
