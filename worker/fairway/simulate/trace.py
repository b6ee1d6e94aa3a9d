"""Arrival traces for `fairway simulate` (pure): CSV with the header `t_s,queue,jobs,run_ms` and
optionally `,tenant`, one row per arrival burst, sorted by `t_s` (docs/scaling.md, "The trace").

Every refusal names the file's line and the column, and says what would be right.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass

COLUMNS = ("t_s", "queue", "jobs", "run_ms")
OPTIONAL = ("tenant",)
MAX_RUN_MS = 7 * 86_400_000  # a job's longest timeout


class TraceError(ValueError):
    pass


@dataclass(frozen=True)
class Arrival:
    t_s: float
    queue: str
    jobs: int
    run_ms: float
    tenant: str | None = None


def _number(text: str, where: str, column: str, *, whole: bool = False) -> float:
    try:
        value = float(text) if not whole else int(text)
    except ValueError:
        kind = "a whole number" if whole else "a number"
        raise TraceError(f"{where}: column {column}: {text!r} is not {kind}") from None
    if not math.isfinite(value):
        raise TraceError(f"{where}: column {column}: {text!r} is not a finite number")
    return value


def parse(lines: Iterable[str], name: str, queues: set[str], tenant_queue: str | None) -> list[Arrival]:
    """The trace's arrivals. `queues`: the supervisor's queues; `tenant_queue`: its tenant group's
    queuePrefix (a row with a tenant must name it), or None when it has none."""
    text = "".join(lines)
    if "\0" in text:
        raise TraceError(f"{name}: not a CSV text file (it holds NUL bytes)")
    rows = csv.reader(io.StringIO(text))
    try:
        header = next(rows)
    except StopIteration:
        raise TraceError(f"{name}: empty; the first line must be the header {','.join(COLUMNS)}") from None
    except csv.Error as exc:
        raise TraceError(f"{name}:1: not CSV ({exc})") from None
    header = [h.strip() for h in header]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise TraceError(
            f"{name}:1: missing column {missing[0]}: the header must be {','.join(COLUMNS)} (optionally ,tenant)"
        )
    unknown = [c for c in header if c not in COLUMNS + OPTIONAL]
    if unknown:
        raise TraceError(f"{name}:1: unknown column {unknown[0]!r}: the columns are {','.join(COLUMNS + OPTIONAL)}")
    at = {c: header.index(c) for c in header}
    out: list[Arrival] = []
    last = 0.0
    try:
        for number, row in enumerate(rows, start=2):
            where = f"{name}:{number}"
            if not row or all(not cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise TraceError(f"{where}: {len(row)} fields, the header has {len(header)}")
            cell = {c: row[i].strip() for c, i in at.items()}
            t_s = _number(cell["t_s"], where, "t_s")
            if t_s < 0:
                raise TraceError(f"{where}: column t_s: {cell['t_s']} is negative; times start at 0")
            if t_s < last:
                raise TraceError(f"{where}: column t_s: {cell['t_s']} is before the row above ({last:g}); sort by t_s")
            jobs = int(_number(cell["jobs"], where, "jobs", whole=True))
            if jobs < 0:
                raise TraceError(f"{where}: column jobs: {jobs} is negative")
            run_ms = _number(cell["run_ms"], where, "run_ms")
            if not 0 < run_ms <= MAX_RUN_MS:
                raise TraceError(f"{where}: column run_ms: {cell['run_ms']} must be above 0 and at most {MAX_RUN_MS}")
            queue, tenant = cell["queue"], cell.get("tenant") or None
            if tenant is not None:
                if tenant_queue is None:
                    raise TraceError(f"{where}: column tenant: the supervisor has no tenants block")
                if queue != tenant_queue:
                    raise TraceError(
                        f"{where}: column queue: a tenant's job goes to the tenant group: write {tenant_queue!r}"
                    )
            elif queue not in queues:
                known = ", ".join(sorted(queues)) or "none"
                raise TraceError(f"{where}: column queue: unknown queue {queue!r}; the supervisor's queues: {known}")
            last = t_s
            out.append(Arrival(t_s, queue, jobs, run_ms, tenant))
    except csv.Error as exc:
        raise TraceError(f"{name}:{rows.line_num}: not CSV ({exc})") from None
    return out
