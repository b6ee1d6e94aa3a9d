"""Job handlers are registered, never looked up by import path from a payload.

A payload names a handler; the worker runs it only if a module it was told to load (`--handlers`)
registered that name with `@fairway.job`. So a document saying `os:system` fails as "unregistered"
instead of running anything.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar, overload

from pydantic import ValidationError

from fairway.queue.protocol.declared import DECLARATION_ATTRIBUTE, Declared, Limits, declare, limits
from fairway.queue.protocol.job import HANDLER_PATTERN, Job
from fairway.resource.schedules import DEFAULT_GRACE_S, DEFAULT_TIMEZONE, Missed, Schedule
from fairway.resource.wording import plain_message
from fairway.resource.worker_settings import WorkerSettings

Handler = Callable[..., Any]
F = TypeVar("F", bound=Handler)


class UnknownHandler(LookupError):
    pass


class Registry:
    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        self._declared: dict[str, Declared] = {}
        # handler name -> (the settings, its jobs' limits) for jobs that set neither tries nor timeout
        self._common_limits: dict[str, tuple[WorkerSettings, Limits]] = {}
        self.schedules: dict[str, Schedule] = {}  # declared by `fairway.schedule(...)` in handler modules

    def register(self, name: str, func: Handler, declared: Declared | None = None) -> None:
        if not HANDLER_PATTERN.fullmatch(name):
            raise ValueError(f"handler name {name!r} must match {HANDLER_PATTERN.pattern}")
        existing = self._handlers.get(name)
        if existing is not None and existing is not func and _path(existing) != _path(func):
            raise ValueError(
                f"handler name {name!r} is registered twice, by {_path(existing)} and {_path(func)}; give one "
                "another name with @fairway.job(name=...)"
            )
        self._handlers[name] = func
        self._declared[name] = declared or Declared(name)
        self._common_limits.clear()

    def get(self, name: str) -> Handler:
        found = self._resolve(name)
        if found is None:
            raise UnknownHandler(
                f"no handler named {name!r} is registered; load the module that defines it with "
                "--handlers MODULE (registered: " + ", ".join(sorted(self._handlers)) + ")"
            )
        return self._handlers[found]

    def limits_for(self, job: Job, settings: WorkerSettings) -> Limits:
        """The job's tries, timeout and backoff: its own, else its handler's `@fairway.job(...)`, else
        the worker's."""
        common = job.max_tries is None and job.timeout is None and job.result_ttl is None  # one per handler, kept
        if common:
            kept = self._common_limits.get(job.handler)
            if kept is not None and kept[0] is settings:
                return kept[1]
        found = self._resolve(job.handler)
        declared = self._declared.get(found) if found is not None else None
        got = limits(
            job.max_tries, job.timeout, declared, settings.tries, settings.timeout_s, settings.backoff_s, job.result_ttl
        )
        if common and found is not None:  # registered names only: a producer's made-up names are not kept
            self._common_limits[job.handler] = (settings, got)
        return got

    def _resolve(self, name: str) -> str | None:
        """The registered name `name` means: itself, or a module-qualified name (myapp.jobs.send) of a
        handler its bare decorator registered."""
        if name in self._handlers:
            return name
        bare = name.rpartition(".")[2]
        found = self._handlers.get(bare)
        return bare if found is not None and _path(found) == name else None

    def names(self) -> list[str]:
        return sorted(self._handlers)

    def wrapped(self, wrap: Callable[[str, Handler], Handler]) -> Registry:
        """A copy whose handlers are `wrap(name, handler)`, declarations kept (fairway.testing records
        what each returned or raised this way)."""
        copy = Registry()
        for name, func in self._handlers.items():
            copy._handlers[name] = wrap(name, func)
            copy._declared[name] = self._declared[name]
        copy.schedules = dict(self.schedules)
        return copy

    def add_schedule(self, declared: Schedule) -> None:
        existing = self.schedules.get(declared.name)
        if existing is not None and existing != declared:
            raise ValueError(f"schedule {declared.name!r} is declared twice, differently; give one another name")
        self.schedules[declared.name] = declared


registry = Registry()


@overload
def job(func: F, /) -> F: ...
@overload
def job(
    *,
    name: str | None = None,
    registry: Registry | None = None,
    tries: int | None = None,
    timeout: float | None = None,
    backoff: Sequence[int] | None = None,
    queue: str | None = None,
    unique_for: float | None = None,
    result_ttl: float | None = None,
) -> Callable[[F], F]: ...


def job(
    func: F | None = None,
    /,
    *,
    name: str | None = None,
    registry: Registry | None = None,
    tries: int | None = None,
    timeout: float | None = None,
    backoff: Sequence[int] | None = None,
    queue: str | None = None,
    unique_for: float | None = None,
    result_ttl: float | None = None,
) -> F | Callable[[F], F]:
    """Register a function as a job handler, under `name` or, bare, under the function's own name
    (`fairway enqueue slow` runs `def slow`; `myjobs.slow` finds it too). `tries`, `timeout` and
    `backoff` (seconds before each retry) are its jobs' defaults, over the worker's; `queue` is where
    `client.enqueue(func, ...)` puts them unless told, `unique_for` makes those jobs unique (by handler
    and arguments) for that many seconds, `result_ttl` keeps their return values that long (docs/results.md).
    A bad value stops the import (ValueError)."""

    def register(f: F) -> F:
        target = registry if registry is not None else globals()["registry"]
        registered = name or f.__name__
        declared = declare(
            registered,
            tries=tries,
            timeout=timeout,
            backoff=backoff,
            queue=queue,
            unique_for=unique_for,
            result_ttl=result_ttl,
        )
        target.register(registered, f, declared)
        setattr(f, DECLARATION_ATTRIBUTE, declared)
        return f

    return register(func) if func is not None else register


def schedule(
    name: str,
    *,
    handler: str | Handler,
    cron: str | None = None,
    every: int | None = None,
    timezone: str = DEFAULT_TIMEZONE,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    queue: str | None = None,
    tenant: str | None = None,
    missed: str = Missed.SKIP,
    grace: int = DEFAULT_GRACE_S,
    registry: Registry | None = None,
) -> Schedule:
    """Declare a periodic job (docs/schedules.md): every worker that imports this module ticks it, and
    each tick gives one job whatever the number of workers. `handler` is a name or a registered
    function (its `@fairway.job(queue=)` is the default queue, else `default`). A bad value stops the
    import (ValueError naming the field)."""
    if callable(handler):
        declared = getattr(handler, DECLARATION_ATTRIBUTE, None)
        if queue is None and tenant is None and declared is not None:
            queue = declared.queue
        handler = declared.name if declared is not None else handler.__name__
    if queue is None and tenant is None:
        queue = "default"
    fields = dict(name=name, handler=handler, cron=cron, every=every, timezone=timezone, args=list(args))
    fields.update(kwargs=dict(kwargs or {}), queue=queue, tenant=tenant, missed=missed, grace=grace)
    try:
        made = Schedule.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "schedule"
        raise ValueError(f"fairway.schedule({name!r}): {where}: {plain_message(first)}") from None
    target = registry if registry is not None else globals()["registry"]
    target.add_schedule(made)
    return made


def _path(func: Handler) -> str:
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', '?')}"


def load_modules(modules: Iterable[str]) -> None:
    """Import the handler modules, the current folder importable (as Celery and RQ users expect); an
    import error stops the worker at start, not on the first job."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise SystemExit(f"fairway: cannot import handler module {module!r}: {exc}") from exc
        except Exception as exc:  # a bad @fairway.job default, a name registered twice, the module's own bug
            where = _user_frame(exc)
            raise SystemExit(
                f"fairway: handler module {module!r} failed while importing, at {where.filename}:{where.lineno}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _user_frame(exc: BaseException) -> traceback.FrameSummary:
    """The deepest frame of the user's code (not Fairway's, not the import machinery's): the line to fix."""
    frames = traceback.extract_tb(exc.__traceback__)
    theirs = [f for f in frames if not f.filename.startswith((_PACKAGE_DIR + os.sep, "<frozen"))]
    return (theirs or frames)[-1]
