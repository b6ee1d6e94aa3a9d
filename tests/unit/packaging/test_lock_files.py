"""The lock files (requirements/*.txt, `./dev lock`) pin what pyproject.toml's open ranges allow: every
dependency pinned, inside its range, with hashes, and the image's lock agreeing with the dev lock."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[3]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s\\;]+)", re.M)


def pins(name: str) -> dict[str, str]:
    return {canonicalize_name(n): v for n, v in PIN.findall((ROOT / "requirements" / name).read_text())}


def hashed(name: str) -> bool:
    blocks = re.split(r"\n(?=[A-Za-z0-9_.-]+==)", (ROOT / "requirements" / name).read_text().split("\n\n", 1)[-1])
    return all("--hash=sha256:" in block for block in blocks if PIN.match(block))


def test_every_dependency_is_pinned_inside_its_range() -> None:
    runtime, dev = pins("runtime.txt"), pins("dev.txt")
    wanted = [
        ("runtime.txt", runtime, PYPROJECT["project"]["dependencies"]),
        ("dev.txt", dev, PYPROJECT["project"]["dependencies"] + PYPROJECT["project"]["optional-dependencies"]["test"]),
        ("both", {**runtime, **dev}, PYPROJECT["build-system"]["requires"]),
    ]
    for label, pinned, requirements in wanted:
        for text in requirements:
            req = Requirement(text)
            name = canonicalize_name(req.name)
            assert name in pinned, f"{label}: {req.name} is not pinned; run ./dev lock"
            assert req.specifier.contains(pinned[name], prereleases=True), f"{label}: {name}=={pinned[name]} not {req}"


def test_every_pin_carries_hashes() -> None:
    assert hashed("runtime.txt") and hashed("dev.txt")


def test_the_image_and_dev_locks_agree() -> None:
    runtime, dev = pins("runtime.txt"), pins("dev.txt")
    assert {n: v for n, v in runtime.items() if dev.get(n) != v} == {}


def test_the_package_ranges_stay_open() -> None:
    """Users resolve their own versions: the package's own requirements are ranges, never pins."""
    for text in PYPROJECT["project"]["dependencies"]:
        assert "==" not in text and "<" not in text, text


def test_the_locked_build_backend_is_the_one_pyproject_asks_for() -> None:
    extras = [line.strip() for line in (ROOT / "requirements" / "lock-extras.in").read_text().splitlines()]
    assert set(PYPROJECT["build-system"]["requires"]) <= set(extras)
