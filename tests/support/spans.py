"""Reading what the `span` handler (support/jobs.py) records: each job's tenant, start and end on the
Redis clock, so overlaps and rates are counted across every worker process (tests and benchmarks)."""

from __future__ import annotations

from typing import Any

SPANS_KEY = "test:spans"


def spans(client: Any) -> list[tuple[str, int, int]]:
    """(tenant, started ms, ended ms) of every job the `span` handler finished, in finishing order."""
    rows = client.lrange(SPANS_KEY, 0, -1)
    return [(t, int(a), int(b)) for t, a, b, *_ in (row.decode().split("\t") for row in rows)]


def most_at_once(rows: list[tuple[str, int, int]], tenant: str) -> int:
    """The most of `tenant`'s jobs that were running at one moment (an end before a start at a tie)."""
    events = sorted([(a, 1) for t, a, _ in rows if t == tenant] + [(b, -1) for t, _, b in rows if t == tenant])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak
