"""Plain data at the edge (pure): everything Fairway serializes (manifests, worker configs, `--json`
output) passes through `plain` first.

Our own types (StrEnum members, paths, pydantic models) are convenient inside the code but each
serializer treats them its own way, and that way changes under us: PyYAML 6.0.4 stopped writing a
`str` subclass as a string. So values are turned into JSON's own types once, here, and anything
else is refused with the path to it, instead of teaching every dumper about every type.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from pathlib import PurePath
from typing import Any

import yaml
from pydantic import BaseModel


def plain(value: Any, path: str = "$") -> Any:
    """A copy of `value` made only of dict, list, str, int, float, bool and None."""
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if isinstance(value, Enum):
        return plain(value.value, path)
    if isinstance(value, bool):  # (before int: bool is an int)
        return bool(value)
    if isinstance(value, str | int | float):
        return _base(value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, BaseModel):
        return plain(value.model_dump(mode="json", by_alias=True, exclude_none=True), path)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = plain(key, f"{path}.<key>")
            if not isinstance(name, str):
                raise TypeError(f"{path}: key {key!r} is a {type(key).__name__}; mapping keys must be strings")
            out[name] = plain(item, f"{path}.{name}")
        return out
    if isinstance(value, list | tuple):
        return [plain(item, f"{path}[{index}]") for index, item in enumerate(value)]
    raise TypeError(f"{path}: a {kind.__name__} cannot be serialized; turn it into plain data where it is built")


def _base(value: str | int | float) -> str | int | float:
    """A str/int/float subclass (not an Enum) as its plain base type."""
    for base in (str, int, float):
        if isinstance(value, base):
            return base(value)
    raise AssertionError(value)  # unreachable: the caller checked the three types


# libyaml's emitter when PyYAML has it (its wheels do): rendering the worker config of a thousand
# supervisors showed in the operator's profiles. The two emitters write the same documents, except that
# they fold a long double-quoted string at different places (the same value either way).
try:
    from yaml import CSafeDumper as _SafeDumper
except ImportError:  # PyYAML built without libyaml
    from yaml import SafeDumper as _SafeDumper  # type: ignore[assignment]


class _PlainDumper(_SafeDumper):
    """Multi-line strings as literal blocks (readable ConfigMaps), and never YAML aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: _PlainDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_PlainDumper.add_representer(str, _str)


def yaml_text(value: Any, *, sort_keys: bool = False) -> str:
    """One YAML document of `plain(value)`."""
    return yaml.dump(plain(value), Dumper=_PlainDumper, sort_keys=sort_keys)


def yaml_documents(values: list[Any]) -> str:
    """Multi-document YAML, as `fairway render` prints it and `kubectl apply -f -` reads it."""
    return yaml.dump_all([plain(value) for value in values], Dumper=_PlainDumper, sort_keys=False)
