"""Handlers run only when registered: a payload can never name an arbitrary function."""

from __future__ import annotations

import pytest

from fairway.queue.runtime.handlers import Registry, UnknownHandler, job


def test_registered_handler_is_found_by_name() -> None:
    registry = Registry()

    @job(name="emails.send", registry=registry)
    def send(to: str) -> str:
        return to

    assert registry.get("emails.send")("a") == "a"


def resize() -> None: ...


def test_a_bare_decorator_registers_the_functions_own_name_and_finds_the_qualified_one() -> None:
    registry = Registry()
    job(registry=registry)(resize)
    assert registry.names() == ["resize"]
    assert registry.get("resize") is resize
    assert registry.get(f"{__name__}.resize") is resize
    with pytest.raises(UnknownHandler):
        registry.get("elsewhere.resize")


def test_two_functions_of_one_name_are_refused_with_the_fix() -> None:
    registry = Registry()
    job(registry=registry)(resize)

    def resize_again() -> None: ...

    resize_again.__name__ = "resize"
    with pytest.raises(ValueError, match=r"registered twice, by .*resize and .*resize_again; give one another name"):
        job(registry=registry)(resize_again)


def test_a_lambda_needs_an_explicit_name() -> None:
    with pytest.raises(ValueError, match="must match"):
        job(registry=Registry())(lambda: None)


@pytest.mark.parametrize("name", ["os:system", "os.system", "subprocess.run", "builtins.eval"])
def test_import_paths_are_not_handlers(name: str) -> None:
    with pytest.raises(UnknownHandler, match="--handlers MODULE"):
        Registry().get(name)


def test_one_name_cannot_be_taken_twice() -> None:
    registry = Registry()
    registry.register("a", print)
    with pytest.raises(ValueError, match="twice"):
        registry.register("a", len)
