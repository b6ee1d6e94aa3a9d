"""`fairway dashboard`: an aiohttp app over a Fairway Redis: overview, tenants, failed jobs, and the
actions a person takes from them (retry, forget, pause, continue, cancel a job).

Safe by default: it binds loopback unless told otherwise; every write needs the token (the
`X-Fairway-Token` header or a `token` form field), and without one configured, or with --read-only,
there are no writes at all; the Redis password is never shown; every value is escaped (views.py).
Redis is called from a thread (redis-py is blocking), so a slow read never stalls other requests.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from aiohttp import web

from fairway.dashboard import views
from fairway.dashboard.data import Board
from fairway.queue.access.figures import SORTS
from fairway.queue.access.results import CANCEL_SAYS
from fairway.queue.access.tenant_settings import checked_settings
from fairway.queue.connection import CONNECTION_ERRORS, RedisClient, redacted
from fairway.queue.protocol.job import JobError, check_job_id, check_tenant_id
from fairway.queue.protocol.keys import is_group_name
from fairway.resource.names import DEFAULT_TENANT_PREFIX

TENANT_ROWS = 200  # tenants listed per page, worst first
FAILED_ROWS = 200
RUNNING_ROWS = 200
BATCH_ROWS = (
    50  # the jobs page's batches: the newest this many  # the jobs page's "running now": the first this many leases
)
TOKEN_HEADER = "X-Fairway-Token"


@dataclass(frozen=True)
class Settings:
    redis_url: str
    token: str | None = None
    read_only: bool = False

    @property
    def can_act(self) -> bool:
        return bool(self.token) and not self.read_only


class Dashboard:
    """The pages and actions over one Redis: one method per route, the middleware that guards them all."""

    def __init__(self, board: Board, settings: Settings) -> None:
        self.board = board
        self.settings = settings

    def render(self, request: web.Request, title: str, body: str) -> web.Response:
        if request.query.get("fragment") == "1":
            return web.Response(text=body, content_type="text/html")
        query = {k: v for k, v in request.query.items() if k != "msg"}
        fragment_url = request.path + "?" + urlencode({**query, "fragment": "1"})
        text = views.page(
            title,
            request.path,
            body,
            redis=redacted(self.settings.redis_url),
            can_act=self.settings.can_act,
            read_only=self.settings.read_only,
            fragment_url=fragment_url,
        )
        return web.Response(text=text, content_type="text/html")

    async def off_loop(self, func: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(func, *args)

    async def overview(self, request: web.Request) -> web.Response:
        data = await self.off_loop(self.board.overview)
        workers = await self.off_loop(self.board.inspector.workers)
        return self.render(
            request, "Overview", views.overview(data, workers, request.query.get("msg"), self.settings.can_act)
        )

    async def tenants(self, request: web.Request) -> web.Response:
        names = await self.off_loop(self.board.names)
        groups = [n[1:] for n in names if is_group_name(n)]
        group = request.query.get("group") or (groups[0] if groups else DEFAULT_TENANT_PREFIX)
        if f"@{group}" not in names:
            group = groups[0] if groups else DEFAULT_TENANT_PREFIX
        sort = request.query.get("sort", "p99")
        sort = sort if sort in SORTS else "p99"
        search = request.query.get("q", "")[:64]
        rows, matched = await self.off_loop(self.board.tenants, group, sort, search, TENANT_ROWS)
        body = views.tenants(
            groups, group, rows, matched, sort, search, request.query.get("msg"), self.settings.can_act
        )
        return self.render(request, "Tenants", body)

    def filters_of(self, source: Any) -> dict[str, str]:
        return {k: str(source.get(k) or "")[:256] for k in ("queue", "handler", "tenant") if source.get(k)}

    async def failed(self, request: web.Request) -> web.Response:
        names = await self.off_loop(self.board.names)
        filters = self.filters_of(request.query)
        served = [filters["queue"]] if filters.get("queue") in names else names
        rows = await self.off_loop(
            self.board.failures, served, filters.get("handler"), filters.get("tenant"), FAILED_ROWS
        )
        body = views.failed(names, filters, rows, request.query.get("msg"), self.settings.can_act)
        return self.render(request, "Failed jobs", body)

    async def jobs(self, request: web.Request) -> web.Response:
        names = await self.off_loop(self.board.names)
        query = request.query
        found = None
        if query.get("id"):
            try:
                served, job_id, tenant = self.job_of(dict(query), names)
            except (ValueError, JobError) as exc:
                return self.refuse(request, str(exc), 400)
            found = await self.off_loop(self.board.find, served, job_id, tenant)
        running = await self.off_loop(self.board.running, names, RUNNING_ROWS)
        batches = await self.off_loop(self.board.batches, BATCH_ROWS)
        body = views.jobs(names, running, found, query.get("msg"), self.settings.can_act, batches)
        return self.render(request, "Jobs", body)

    @staticmethod
    def job_of(form: dict[str, str], names: list[str]) -> tuple[str, str, str | None]:
        """The job a form names: (served name, id, tenant or None), each checked (ValueError says what)."""
        served, tenant = form.get("queue", ""), form.get("tenant", "").strip() or None
        if served not in names:
            raise ValueError(f"no queue or tenant group {served!r} is known")
        job_id = check_job_id(form.get("id", "").strip())
        if tenant is not None:
            check_tenant_id(tenant)
        if is_group_name(served) != (tenant is not None):
            raise ValueError("a tenant group's job needs its tenant; a queue's job has none")
        return served, job_id, tenant

    async def failed_job(self, request: web.Request) -> web.Response:
        served, job_id = request.query.get("queue", ""), request.query.get("id", "")
        names = await self.off_loop(self.board.names)
        found = await self.off_loop(self.board.failures, [served], None, None, None) if served in names else []
        job = next((f for f in found if f.id == job_id), None)
        return self.render(request, "Failed job", views.failed_job(job, served, job_id, self.settings.can_act))

    async def act(self, request: web.Request) -> web.Response:
        verb = request.match_info["verb"]
        form = await request.post()
        if not self.settings.can_act:
            reason = "this dashboard is read-only" if self.settings.read_only or not self.settings.token else ""
            return self.refuse(request, reason or "actions are off", 403)
        given = request.headers.get(TOKEN_HEADER) or str(form.get("token") or "")
        if not (self.settings.token and hmac.compare_digest(given.encode(), self.settings.token.encode())):
            return self.refuse(
                request, "refused: this action needs the dashboard's token (enter it at the top right)", 403
            )
        try:
            message = await self.off_loop(self.perform, verb, {k: str(v) for k, v in form.items()})
        except (ValueError, JobError) as exc:
            return self.refuse(request, str(exc), 400)
        # Back to the page the action came from (its path only: never another site), with the outcome.
        back = urlsplit(request.headers.get("Referer", "/"))
        path = back.path if back.path.startswith("/") and not back.path.startswith("//") else "/"
        query = [(k, v) for k, v in parse_qsl(back.query) if k not in ("msg", "fragment")]
        raise web.HTTPSeeOther(path + "?" + urlencode([*query, ("msg", message)]))

    def perform(self, verb: str, form: dict[str, str]) -> str:
        names = self.board.names()
        queue = form.get("queue", "")
        if verb == "cancel":
            family, job_id, tenant = self.job_of(form, names)
            said = self.board.handle(family, job_id, tenant).cancel()
            where = f"tenant {tenant} of {family}" if tenant else f"queue {family}"
            return f"job {job_id}: {CANCEL_SAYS[said].format(where=where)}"
        if verb in ("pause", "continue"):
            if queue not in names:
                raise ValueError(f"no queue or tenant group {queue!r} is known")
            tenant = form.get("tenant")
            if tenant and is_group_name(queue):
                if verb == "pause":
                    self.board.admin.pause_tenant(queue[1:], tenant)
                else:
                    self.board.admin.continue_tenant(queue[1:], tenant)
                return f"tenant {tenant} of {queue}: {'paused' if verb == 'pause' else 'serving again'}"
            (self.board.admin.pause if verb == "pause" else self.board.admin.resume)(queue)
            return f"{queue}: {'paused' if verb == 'pause' else 'serving again'}"
        if verb in ("tenant-set", "tenant-reset"):
            return self.set_tenant(verb, form)
        served = [queue] if queue in names else names
        if form.get("all") == "1":
            chosen = self.board.failures(served, form.get("handler") or None, form.get("tenant") or None, None)
        else:
            chosen = [f for f in self.board.failures(served, None, None, None) if f.id == form.get("id")]
            if not chosen:
                raise ValueError(f"no failed job {form.get('id')!r} in {queue or 'any queue'}")
        settled = self.board.admin.settle_failures(verb, chosen)
        noun = "failed job" if len(settled.done) == 1 else "failed jobs"
        message = f"{'retried' if verb == 'retry' else 'forgot'} {len(settled.done)} {noun}"
        if settled.refused:
            failure, reason = settled.refused[0]
            message += f"; {len(settled.refused)} kept, they cannot be enqueued as they are ({failure.id}: {reason})"
        return message

    def set_tenant(self, verb: str, form: dict[str, str]) -> str:
        """The tenants page's form: one tenant's run-time settings, as `fairway tenant set|reset` does."""
        group, tenant = form.get("group", ""), form.get("tenant", "").strip()
        if f"@{group}" not in self.board.names():
            raise ValueError(f"no tenant group @{group!r} is known")
        if verb == "tenant-reset":
            self.board.tenant_settings.reset(group, tenant)
            return f"tenant {tenant} of @{group}: run-time settings dropped"
        fields = {"weight": "weight", "max_in_flight": "max in flight", "rate": "rate", "burst": "burst"}
        given: dict[str, float] = {}
        for name, label in fields.items():
            text = form.get(name, "").strip().removesuffix("/s")
            if text:
                try:
                    given[name] = float(text) if name == "rate" else int(text)
                except ValueError:
                    raise ValueError(f"{label}: {text!r} is not a number") from None
        if not given:
            raise ValueError("nothing to set: fill in weight, max in flight, rate or burst")
        self.board.tenant_settings.set(group, tenant, checked_settings(**given))
        return f"tenant {tenant} of @{group}: set"

    def refuse(self, request: web.Request, reason: str, status: int) -> web.Response:
        response = self.render(request, "Refused", views.refused(reason))
        response.set_status(status)
        return response

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in ("fairway.js", "fairway.css"):
            raise web.HTTPNotFound()
        text = resources.files("fairway.dashboard").joinpath("static", name).read_text()
        kind = "application/javascript" if name.endswith(".js") else "text/css"
        return web.Response(text=text, content_type=kind, headers={"Cache-Control": "max-age=300"})

    async def healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    @web.middleware
    async def secure_headers(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        try:
            response = await handler(request)
        except CONNECTION_ERRORS as exc:  # Redis went away: say so, keep serving, recover when it is back
            response = self.render(
                request,
                "Redis unreachable",
                views.refused(f"Redis is unreachable ({type(exc).__name__}); retrying on the next refresh"),
            )
            response.set_status(503)
        response.headers.setdefault(
            "Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
        )
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response


def make_app(client: RedisClient, settings: Settings) -> web.Application:
    dashboard = Dashboard(Board(client), settings)
    app = web.Application()
    app.middlewares.append(dashboard.secure_headers)
    app.router.add_get("/", dashboard.overview)
    app.router.add_get("/tenants", dashboard.tenants)
    app.router.add_get("/failed", dashboard.failed)
    app.router.add_get("/failed/job", dashboard.failed_job)
    app.router.add_get("/jobs", dashboard.jobs)
    app.router.add_post("/actions/{verb:retry|forget|pause|continue|tenant-set|tenant-reset|cancel}", dashboard.act)
    app.router.add_get("/static/{name}", dashboard.static)
    app.router.add_get("/healthz", dashboard.healthz)
    return app
