"""The dashboard's HTML, rendered on the server from plain data (pure: no Redis, no web framework).

Every value that came from Redis or from a request goes through `esc`, so a payload holding `<script>`
is shown as text. Pages are whole documents; `?fragment=1` asks for the part inside `<main>` alone,
which fairway.js swaps in every few seconds (no full reload, no front-end build).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlencode

from fairway.queue.access.figures import (
    BatchStatus,
    FailedJob,
    FoundJob,
    RunningJob,
    TenantFigures,
    duration,
    timestamp,
)

NAV = (("/", "Overview"), ("/tenants", "Tenants"), ("/jobs", "Jobs"), ("/failed", "Failed jobs"))
FINISHED = ("done", "failed", "cancelled")  # a job in one of these has nothing left to cancel


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def page(title: str, path: str, body: str, *, redis: str, can_act: bool, read_only: bool, fragment_url: str) -> str:
    nav = "".join(f'<a href="{href}"{" class=active" if href == path else ""}>{esc(text)}</a>' for href, text in NAV)
    if read_only:
        mode = '<span class="mode">read-only</span>'
    elif can_act:
        mode = (
            '<label class="mode">token <input type="password" id="token" autocomplete="off" '
            'placeholder="for actions"></label>'
        )
    else:
        mode = '<span class="mode">read-only (start with --token to allow actions)</span>'
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Fairway · {esc(title)}</title>"
        '<link rel="stylesheet" href="/static/fairway.css"><script src="/static/fairway.js" defer></script>'
        "</head><body>"
        f'<header><strong class="brand">Fairway</strong><nav>{nav}</nav>'
        f'<span class="redis" title="Redis (password never shown)">{esc(redis)}</span>{mode}</header>'
        f'<main id="live" data-fragment="{esc(fragment_url)}">{body}</main>'
        "</body></html>"
    )


def flash(message: str | None) -> str:
    return f'<p class="flash" role="status">{esc(message)}</p>' if message else ""


def card(label: str, value: str, css: str = "") -> str:
    return (
        f'<div class="card {css}"><span class="value">{esc(value)}</span><span class="label">{esc(label)}</span></div>'
    )


def action(path: str, label: str, fields: dict[str, str], *, css: str = "", confirm: str = "") -> str:
    inputs = "".join(f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">' for k, v in fields.items())
    data = f' data-confirm="{esc(confirm)}"' if confirm else ""
    return (
        f'<form class="action" method="post" action="{esc(path)}"{data}>{inputs}'
        f'<button type="submit" class="{esc(css)}">{esc(label)}</button></form>'
    )


def ms(value: float | None) -> str:
    return duration(None if value is None else value / 1000)


def overview(data: Any, workers: Sequence[dict[str, Any]], message: str | None, can_act: bool) -> str:
    processes: dict[str, int] = {}
    for worker in workers:
        for name in worker.get("served") or []:
            processes[str(name)] = processes.get(str(name), 0) + 1
    cards = "".join(
        [
            card("jobs per minute (5 min)", f"{data.jobs_per_minute:.1f}"),
            card("ready", str(data.ready)),
            card("failed", str(data.failed), "bad" if data.failed else ""),
            card("worker processes", str(len(workers))),
            card("queues", str(len(data.rows))),
        ]
    )
    rows = []
    for row in data.rows:
        s, runs = row.stats, row.runs
        state = "paused" if s.paused else "serving"
        name = (
            f'<a href="/tenants?{urlencode({"group": s.queue[1:]})}">{esc(s.queue)}</a>' if row.group else esc(s.queue)
        )
        detail = ""
        if row.group is not None:
            g = row.group
            detail = (
                f'<div class="sub">{g.recent} {"tenant" if g.recent == 1 else "tenants"} active in the last 5 '
                f"minutes, {g.waiting} with jobs waiting now, {g.quarantined} quarantined, "
                f"{g.paused_tenants} paused</div>"
            )
        verb = "continue" if s.paused else "pause"
        buttons = action(f"/actions/{verb}", verb, {"queue": s.queue}) if can_act else ""
        rows.append(
            f'<tr class="{state}" data-queue="{esc(s.queue)}"><td>{name}{detail}</td>'
            f'<td class="num ready">{s.ready}</td><td class="num">{s.reserved}</td><td class="num">{s.delayed}</td>'
            f'<td class="num{" bad" if s.failed else ""}">{s.failed}</td>'
            f'<td class="num">{runs.jobs / 5:.1f}</td><td class="num">{ms(runs.average_ms)}</td>'
            f'<td class="num">{ms(runs.wait_ms(0.5))}</td><td class="num">{ms(runs.wait_ms(0.99))}</td>'
            f'<td class="num">{duration(s.oldest_age_s)}</td><td class="num">{processes.get(s.queue, 0)}</td>'
            f'<td><span class="badge {state}">{state}</span></td><td>{buttons}</td></tr>'
        )
    table = (
        "<table class=queues><thead><tr><th>Queue</th><th>Ready</th><th>Reserved</th><th>Delayed</th>"
        "<th>Failed</th><th>Jobs/min</th><th>Avg run</th><th>Wait p50</th><th>Wait p99</th><th>Oldest</th>"
        "<th>Processes</th><th>State</th><th></th></tr></thead><tbody>"
        + ("".join(rows) or '<tr><td colspan=13 class="empty">no queues yet: enqueue a job or start a worker</td></tr>')
        + "</tbody></table>"
    )
    return f'{flash(message)}<section class="cards">{cards}</section><h2>Queues</h2>{table}'


def sparkline(values: Sequence[float | None], width: int = 100, height: int = 20) -> str:
    """An inline SVG of a tenant's per-minute p99 waits, oldest left: a dot per minute with jobs, joined
    by a line, over a baseline for the whole window (minutes without jobs stay empty)."""
    points = [v for v in values if v is not None]
    baseline = f'<line class="base" x1="2" y1="{height - 2}" x2="{width - 2}" y2="{height - 2}"/>'
    if not points:
        return f'<svg class="spark" width="{width}" height="{height}" aria-label="no recent waits">{baseline}</svg>'
    top = max(points) or 1.0
    step = (width - 4) / max(1, len(values) - 1)
    xy = [(2 + i * step, height - 2 - (v / top) * (height - 5)) for i, v in enumerate(values) if v is not None]
    if len(xy) == 1:  # one minute with jobs: a level across the window, not a lone dot
        xy = [(2.0, xy[0][1]), *xy, (width - 2.0, xy[0][1])]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
    marks = xy[1:2] if len(points) == 1 else xy  # the level's ends are not minutes
    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2"/>' for x, y in marks)
    label = ", ".join(ms(v) for v in points)
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="p99 wait per minute: {esc(label)}">{baseline}<polyline points="{line}"/>{dots}</svg>'
    )


SORT_HEADERS = (("waiting", "Waiting"), ("failures", "Fail %"), ("p99", "p99 wait"))


def tenants(
    groups: Sequence[str],
    group: str,
    rows: Sequence[TenantFigures],
    matched: int,
    sort: str,
    search: str,
    message: str | None,
    can_act: bool,
) -> str:
    def link(**change: str) -> str:
        return "/tenants?" + urlencode({"group": group, "sort": sort, "q": search, **change})

    options = "".join(f"<option{' selected' if g == group else ''}>{esc(g)}</option>" for g in groups or [group])
    sorts = {
        key: f'<a class="sort{" active" if key == sort else ""}" href="{esc(link(sort=key))}">{label}</a>'
        for key, label in SORT_HEADERS
    }
    body = []
    for f in rows:
        css = " ".join(c for c, on in (("quarantined", f.quarantined), ("paused", f.paused)) if on)
        words = {"quarantined": f"quarantined ({f.quarantine_reason})" if f.quarantine_reason else "quarantined"}
        badges = "".join(f'<span class="badge {c}">{esc(words.get(c, c))}</span>' for c in css.split())
        if f.rate is not None:
            badges += f'<span class="badge limit">rate {f.rate:g}/s</span>'
        if f.capped or f.throttled:
            skipped = f"skipped {f.capped} capped, {f.throttled} throttled"
            badges += f'<span class="badge limit" title="turns skipped">{skipped}</span>'
        flight = f"{f.in_flight}/{f.max_in_flight}" if f.max_in_flight else str(f.in_flight)
        act = ""
        if can_act:
            verb = "continue" if f.paused else "pause"
            act = action(f"/actions/{verb}", verb, {"queue": f"@{group}", "tenant": f.tenant})
        body.append(
            f'<tr class="{css}" data-tenant="{esc(f.tenant)}"><td>{esc(f.tenant)}</td><td class="num">{f.weight}</td>'
            f'<td class="num">{f.waiting}</td><td class="num">{flight}</td><td class="num">{f.completed}</td>'
            f'<td class="num">{f.failed}</td><td class="num">{f.failure_rate:.1%}</td>'
            f'<td class="num">{ms(f.p50_wait_ms)}</td><td class="num p99">{ms(f.p99_wait_ms)}</td>'
            f"<td>{sparkline(f.recent_p99_ms)}</td><td>{badges}</td><td>{act}</td></tr>"
        )
    shown = f"showing {len(rows)} of {matched} tenants active in the last 5 minutes, worst first"
    return (
        f"{flash(message)}<h2>Tenants of @{esc(group)}</h2>"
        f'<form class="filters" method="get" action="/tenants"><select name="group">{options}</select>'
        f'<input type="hidden" name="sort" value="{esc(sort)}">'
        f'<input type="search" name="q" value="{esc(search)}" placeholder="search tenant id">'
        f'<button type="submit">Search</button></form><p class="sub">{esc(shown)}</p>'
        f"{settings_form(group) if can_act else ''}"
        "<table class=tenants><thead><tr><th>Tenant</th><th>Weight</th>"
        f"<th>{sorts['waiting']}</th><th>In flight</th><th>Done</th>"
        '<th title="failed attempts in the window, retries included; jobs that failed for good are on the '
        f'Failed jobs page">Tries failed</th><th>{sorts["failures"]}</th>'
        f"<th>p50 wait</th><th>{sorts['p99']}</th><th>Recent p99</th><th>State</th><th></th></tr></thead><tbody>"
        + ("".join(body) or '<tr><td colspan=12 class="empty">no tenants active in the last 5 minutes</td></tr>')
        + "</tbody></table>"
    )


def settings_form(group: str) -> str:
    """One tenant's run-time weight, cap and rate (empty fields stay as they are), or a reset."""
    inputs = "".join(
        f'<input name="{name}" placeholder="{label}" size="8">'
        for name, label in (
            ("weight", "weight"),
            ("max_in_flight", "max in flight"),
            ("rate", "rate /s"),
            ("burst", "burst"),
        )
    )
    return (
        f'<form class="settings action" method="post" action="/actions/tenant-set">'
        f'<input type="hidden" name="group" value="{esc(group)}"><span class="sub">one tenant, at run time:</span>'
        f'<input name="tenant" placeholder="tenant id" required size="14">{inputs}'
        '<button type="submit">Set</button>'
        '<button type="submit" formaction="/actions/tenant-reset">Reset</button></form>'
    )


def failed(
    names: Sequence[str],
    filters: dict[str, str],
    rows: Sequence[FailedJob],
    message: str | None,
    can_act: bool,
) -> str:
    queue_options = '<option value="">every queue</option>' + "".join(
        f"<option{' selected' if n == filters.get('queue') else ''}>{esc(n)}</option>" for n in names
    )
    form = (
        f'<form class="filters" method="get" action="/failed"><select name="queue">{queue_options}</select>'
        f'<input name="handler" value="{esc(filters.get("handler", ""))}" placeholder="handler">'
        f'<input name="tenant" value="{esc(filters.get("tenant", ""))}" placeholder="tenant">'
        '<button type="submit">Filter</button></form>'
    )
    bulk = ""
    if can_act and rows:
        bulk = (
            '<div class="bulk">'
            + "".join(
                action(
                    f"/actions/{verb}",
                    f"{verb} all {len(rows)} shown",
                    {**filters, "all": "1"},
                    css=verb,
                    confirm=f"{verb} every failed job matching these filters?",
                )
                for verb in ("retry", "forget")
            )
            + "</div>"
        )
    body = []
    for f in rows:
        detail = "/failed/job?" + urlencode({"queue": f.served_name, "id": f.id})
        error = f"{f.record.get('exception') or ''}: {f.record.get('message') or ''}".strip(": ")
        buttons = ""
        if can_act:
            fields = {"queue": f.served_name, "id": f.id}
            buttons = action("/actions/retry", "retry", fields, css="retry") + action(
                "/actions/forget", "forget", fields, css="forget"
            )
        body.append(
            f'<tr data-id="{esc(f.id)}"><td>{esc(timestamp(f.failed_at_ms))}</td><td>{esc(f.served_name)}</td>'
            f'<td><a href="{esc(detail)}">{esc(f.id)}</a></td><td>{esc(f.handler)}</td><td>{esc(f.tenant or "-")}</td>'
            f'<td class="num">{esc(f.record.get("attempts"))}</td><td class="error">{esc(error[:200])}</td>'
            f"<td>{buttons}</td></tr>"
        )
    return (
        f"{flash(message)}<h2>Failed jobs</h2>{form}{bulk}"
        "<table class=failed><thead><tr><th>Failed at</th><th>Queue</th><th>ID</th><th>Handler</th><th>Tenant</th>"
        "<th>Tries</th><th>Error</th><th></th></tr></thead><tbody>"
        + ("".join(body) or '<tr><td colspan=8 class="empty">no failed jobs match</td></tr>')
        + "</tbody></table>"
    )


def failed_job(job: FailedJob | None, served: str, job_id: str, can_act: bool) -> str:
    if job is None:
        return f'<h2>Failed job</h2><p class="empty">no failed job {esc(job_id)} in {esc(served)}</p>'
    r = job.record
    buttons = ""
    if can_act:
        fields = {"queue": job.served_name, "id": job.id}
        buttons = action("/actions/retry", "retry", fields, css="retry") + action(
            "/actions/forget", "forget", fields, css="forget"
        )
    facts: Iterable[tuple[str, object]] = (
        ("queue", job.served_name),
        ("handler", job.handler),
        ("tenant", job.tenant or "-"),
        ("failed at", timestamp(job.failed_at_ms)),
        ("attempts", r.get("attempts")),
        ("exception", r.get("exception")),
        ("message", r.get("message")),
    )
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts)
    return (
        f'<h2>Failed job <code>{esc(job.id)}</code></h2><div class="bulk">{buttons}</div>'
        f'<table class="facts">{rows}</table><h3>Payload</h3>'
        f'<pre class="payload">{esc(readable(r.get("payload")))}</pre>'
        f'<h3>Traceback</h3><pre class="traceback">{esc(r.get("traceback") or "-")}</pre>'
    )


def jobs(
    names: Sequence[str],
    running: Sequence[RunningJob],
    found: FoundJob | None,
    message: str | None,
    can_act: bool,
    batches: Sequence[BatchStatus] = (),
) -> str:
    """Find a job by id (its status, and a cancel button while it may still run) and the jobs running now."""
    chosen = found.served if found is not None else ""
    options = "".join(f"<option{' selected' if n == chosen else ''}>{esc(n)}</option>" for n in names)
    form = (
        '<form class="filters" method="get" action="/jobs">'
        f'<input name="id" value="{esc(found.id if found else "")}" placeholder="job id" required>'
        f'<select name="queue">{options}</select>'
        f'<input name="tenant" value="{esc(found.tenant or "" if found else "")}" placeholder="tenant (in a group)">'
        '<button type="submit">Find</button></form>'
    )
    lookup = ""
    if found is not None:
        button = ""
        if can_act and found.status not in FINISHED:
            fields = {"queue": found.served, "id": found.id, "tenant": found.tenant or ""}
            button = action("/actions/cancel", "cancel", fields, css="forget", confirm=f"Cancel job {found.id}?")
        said = {
            "unknown": "not running and no result kept: waiting (cancel finds it), finished without a kept "
            "result, or never enqueued here",
        }.get(found.status, found.status)
        lookup = (
            f'<table class="facts"><tr><th>job</th><td><code>{esc(found.id)}</code></td></tr>'
            f"<tr><th>where</th><td>{esc(found.served)}{' / ' + esc(found.tenant) if found.tenant else ''}</td></tr>"
            f'<tr><th>status</th><td class="status">{esc(said)}</td></tr></table>'
            f'<div class="bulk">{button}</div>'
        )
    rows = []
    for job in running:
        cancel = ""
        if can_act:
            fields = {"queue": job.served_name, "id": job.id, "tenant": job.tenant or ""}
            cancel = action("/actions/cancel", "cancel", fields, css="forget", confirm=f"Cancel job {job.id}?")
        rows.append(
            f"<tr><td>{esc(job.served_name)}</td><td>{esc(job.tenant or '-')}</td><td><code>{esc(job.id)}</code></td>"
            f"<td>{esc(job.handler)}</td><td>{esc(job.worker)}</td><td>{cancel}</td></tr>"
        )
    table = (
        "<table><tr><th>queue</th><th>tenant</th><th>job</th><th>handler</th><th>worker</th><th></th></tr>"
        + "".join(rows)
        + "</table>"
        if rows
        else '<p class="empty">no job is running</p>'
    )
    return f"<h2>Find a job</h2>{flash(message)}{form}{lookup}<h2>Running now</h2>{table}{batch_table(batches)}"


def batch_table(batches: Sequence[BatchStatus]) -> str:
    """Batches, newest first: where, counts and state (docs/batches.md)."""
    if not batches:
        return '<h2>Batches</h2><p class="empty">no batches</p>'
    rows = "".join(
        f'<tr data-batch="{esc(b.id)}"><td><code>{esc(b.id)}</code></td>'
        f"<td>{esc(b.served_name)}{' / ' + esc(b.tenant) if b.tenant else ''}</td>"
        f'<td class="num">{b.total}</td><td class="num">{b.pending}</td><td class="num">{b.succeeded}</td>'
        f'<td class="num{" bad" if b.failed else ""}">{b.failed}</td><td class="num">{b.cancelled}</td>'
        f"<td>{'done' if b.done else 'running' if b.sealed else 'open'}</td></tr>"
        for b in batches
    )
    head = (
        "<tr><th>batch</th><th>where</th><th>total</th><th>pending</th><th>succeeded</th><th>failed</th>"
        "<th>cancelled</th><th>state</th></tr>"
    )
    return f"<h2>Batches</h2><table>{head}{rows}</table>"


def readable(payload: object) -> str:
    """A job document indented for reading (one long line otherwise); as stored when it is not JSON."""
    if not isinstance(payload, str):
        return str(payload)
    try:
        return json.dumps(json.loads(payload), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return payload


def refused(reason: str) -> str:
    return f'<h2>Refused</h2><p class="flash bad" role="alert">{esc(reason)}</p><p><a href="/">back</a></p>'
