"""Job handlers are registered, never looked up by import path from a payload.

A payload names a handler; the worker runs it only if a module it was told to load (`--handlers`)
registered that name with `@fairway.job`. So a document saying `os:system` fails as "unregistered"
instead of running anything.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, overload

from fairway.queue.job import HANDLER_PATTERN

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
        if existing is not None and existing is not func:
            raise ValueError(f"handler name {name!r} is registered twice")
        self._handlers[name] = func

    def get(self, name: str) -> Handler:
        try:
            return self._handlers[name]
        except KeyError:
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
    """Register a function as a job handler, under `name` or `<module>.<qualname>`."""

    def register(f: F) -> F:
        target = registry if registry is not None else globals()["registry"]
        target.register(name or f"{f.__module__}.{f.__qualname__}", f)
        return f

    return register(func) if func is not None else register


def load_modules(modules: Iterable[str]) -> None:
    """Import the handler modules; an import error stops the worker at start, not on the first job."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise SystemExit(f"fairway: cannot import handler module {module!r}: {exc}") from exc
