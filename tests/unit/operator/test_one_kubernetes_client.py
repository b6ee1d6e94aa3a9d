"""Every request the operator makes besides kopf's own goes through fairway_operator/kube.py: no other
module builds an API object of the official client (CoreV1Api, ...) or opens HTTP itself (aiohttp)."""

from __future__ import annotations

import ast
from pathlib import Path

OPERATOR = Path(__file__).resolve().parents[3] / "operator" / "fairway_operator"


def talkers(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in {"aiohttp", "requests"}]
        elif isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            if root in {"aiohttp", "requests"}:
                found.append(node.module)
            if node.module.startswith("kubernetes"):
                found += [f"{node.module}.{a.name}" for a in node.names if a.name.endswith("Api")]
    return found


def test_only_kube_py_makes_requests() -> None:
    offenders = {p.name: talkers(p) for p in sorted(OPERATOR.glob("*.py")) if p.name != "kube.py" and talkers(p)}
    assert offenders == {}, f"route these through fairway_operator.kube: {offenders}"


def test_the_check_sees_kube_py_itself() -> None:
    assert "aiohttp" in talkers(OPERATOR / "kube.py")
