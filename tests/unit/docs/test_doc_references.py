"""Every doc a help text, docstring, doc or README names exists: `fairway simulate --help` once sent users
to a docs/simulate.md that was never written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SOURCES = [
    *ROOT.glob("worker/fairway/**/*.py"),
    *ROOT.glob("operator/fairway_operator/**/*.py"),
    *ROOT.glob("docs/*.md"),
    *ROOT.glob("charts/fairway/**/*.yaml"),
    ROOT / "README.md",
    ROOT / "ARCHITECTURE.md",
    ROOT / "clients/node/README.md",
]
DOC = re.compile(r"\bdocs/([A-Za-z0-9_.-]+\.(?:md|png|json))")


def references() -> list[tuple[str, str]]:
    found = []
    for path in SOURCES:
        for name in sorted(set(DOC.findall(path.read_text(encoding="utf-8")))):
            found.append((str(path.relative_to(ROOT)), name))
    return found


@pytest.mark.parametrize(("source", "doc"), references(), ids=lambda value: str(value))
def test_a_named_doc_exists(source: str, doc: str) -> None:
    assert (ROOT / "docs" / doc).exists(), f"{source} names docs/{doc}, which does not exist"


def test_the_scan_finds_references() -> None:
    assert len(references()) > 20
