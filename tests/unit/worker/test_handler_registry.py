"""Handlers run only when registered: a payload can never name an arbitrary function."""

from __future__ import annotations

import pytest

from fairway.queue.handlers import Registry, UnknownHandler, job


def test_registered_handler_is_found_by_name() -> None:
    registry = Registry()

    @job(name="emails.send", registry=registry)
    def send(to: str) -> str:
        return to

    assert registry.get("emails.send")("a") == "a"


def resize() -> None: ...


def test_default_name_is_module_and_qualname() -> None:
    registry = Registry()
    job(registry=registry)(resize)
    assert registry.names() == [f"{__name__}.resize"]


def test_a_nested_function_needs_an_explicit_name() -> None:
    def inner() -> None: ...

    with pytest.raises(ValueError, match="must match"):
        job(registry=Registry())(inner)


@pytest.mark.parametrize("name", ["os:system", "os.system", "subprocess.run", "builtins.eval"])
def test_import_paths_are_not_handlers(name: str) -> None:
    with pytest.raises(UnknownHandler, match="--handlers MODULE"):
        Registry().get(name)


def test_one_name_cannot_be_taken_twice() -> None:
    registry = Registry()
    registry.register("a", print)
    with pytest.raises(ValueError, match="twice"):
        registry.register("a", len)
