"""Plain data at the edge: what leaves Fairway for a serializer is made of JSON's own types only."""

from __future__ import annotations

from enum import IntEnum, StrEnum
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fairway.plan.pools import SpecialPool
from fairway.resource.plain import plain, yaml_documents, yaml_text


class Colour(StrEnum):
    RED = "red"


class Level(IntEnum):
    HIGH = 3


class Name(str):
    pass


def test_enums_paths_and_str_subclasses_become_their_plain_values() -> None:
    value = {"pool": SpecialPool.SHARED, "c": [Colour.RED, Level.HIGH], "p": Path("/etc/x"), "n": Name("a"), "t": (1,)}
    out = plain(value)
    assert out == {"pool": "@all", "c": ["red", 3], "p": "/etc/x", "n": "a", "t": [1]}
    assert [type(v) for v in (out["pool"], out["c"][0], out["c"][1], out["n"])] == [str, str, int, str]


def test_booleans_stay_booleans() -> None:
    assert plain({"a": True, "b": 0}) == {"a": True, "b": 0} and type(plain(True)) is bool


def test_anything_else_is_refused_with_its_path() -> None:
    with pytest.raises(TypeError, match=r"\$\.spec\.items\[1\]: a object cannot be serialized"):
        plain({"spec": {"items": [1, object()]}})
    with pytest.raises(TypeError, match="mapping keys must be strings"):
        plain({1: "x"})


def test_yaml_of_enums_reads_back_as_strings() -> None:
    assert yaml.safe_load(yaml_text({"pool": SpecialPool.TENANTS})) == {"pool": "@tenants"}
    text = yaml_documents([{"a": "one\ntwo\n"}, {"b": Colour.RED}])
    assert "a: |" in text and list(yaml.safe_load_all(text)) == [{"a": "one\ntwo\n"}, {"b": "red"}]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.lists(st.text(max_size=40), max_size=3))
def test_any_string_reads_back_as_written(text: str, texts: list[str]) -> None:
    """libyaml's emitter (when PyYAML has it) folds long quoted strings in its own way: same values."""
    value = {"one": text, "many": texts, "nested": {"k": text}}
    assert yaml.safe_load(yaml_text(value)) == value
    assert list(yaml.safe_load_all(yaml_documents([value, {"x": text}]))) == [value, {"x": text}]
