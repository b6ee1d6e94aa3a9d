"""Job handlers are registered, never looked up by import path from a payload.

A payload names a handler; the worker runs it only if a module it was told to load (`--handlers`)
registered that name with `@fairway.job`. So a document saying `os:system` fails as "unregistered"
instead of running anything.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, overload

from fairway.queue.protocol.job import HANDLER_PATTERN

Handler = Callable[..., Any]
F = TypeVar("F", bound=Handler)


class UnknownHandler(LookupError):
    pass


class Registry:
    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}

    def register(self, name: str, func: Handler) -> None:
        if not HANDLER_PATTERN.fullmatch(name):
            raise ValueError(f"handler name {name!r} must match {HANDLER_PATTERN.pattern}")
        existing = self._handlers.get(name)
        if existing is not None and existing is not func and _path(existing) != _path(func):
            raise ValueError(
                f"handler name {name!r} is registered twice, by {_path(existing)} and {_path(func)}; give one "
                "another name with @fairway.job(name=...)"
            )
        self._handlers[name] = func

    def get(self, name: str) -> Handler:
        try:
            return self._handlers[name]
        except KeyError:
            # A module-qualified name (myapp.jobs.send) finds the handler its bare decorator registered.
            found = self._handlers.get(name.rpartition(".")[2])
            if found is not None and _path(found) == name:
                return found
            raise UnknownHandler(
                f"no handler named {name!r} is registered; load the module that defines it with "
                "--handlers MODULE (registered: " + ", ".join(sorted(self._handlers)) + ")"
            ) from None

    def names(self) -> list[str]:
        return sorted(self._handlers)


registry = Registry()


@overload
def job(func: F, /) -> F: ...
@overload
def job(*, name: str | None = None, registry: Registry | None = None) -> Callable[[F], F]: ...


def job(func: F | None = None, /, *, name: str | None = None, registry: Registry | None = None) -> F | Callable[[F], F]:
    """Register a function as a job handler, under `name` or, bare, under the function's own name
    (`fairway enqueue slow` runs `def slow`; `myjobs.slow` finds it too)."""

    def register(f: F) -> F:
        target = registry if registry is not None else globals()["registry"]
        target.register(name or f.__name__, f)
        return f

    return register(func) if func is not None else register


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
