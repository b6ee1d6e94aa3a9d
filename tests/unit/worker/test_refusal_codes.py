"""The protocol's refusal codes are one table (fairway.queue.protocol.job.REFUSALS): docs/protocol.md lists it
word for word, each code is raised somewhere, and the Node client knows every one."""

from __future__ import annotations

import re
from pathlib import Path

from fairway.queue.protocol.job import REFUSALS

ROOT = Path(__file__).resolve().parents[3]
SCRIPTS = ROOT / "worker" / "fairway" / "queue" / "protocol" / "scripts"
NODE = ROOT / "clients" / "node" / "src"


def documented() -> dict[str, tuple[str, str]]:
    text = (ROOT / "docs" / "protocol.md").read_text()
    table = text[text.index("<!-- refusal-codes:") :].split("\n\n", 1)[0]
    rows = [line.split("|")[1:-1] for line in table.splitlines() if line.startswith("| `")]
    return {cells[0].strip().strip("`"): (cells[1].strip(), cells[2].strip()) for cells in rows}


def test_the_docs_table_is_the_code_table() -> None:
    assert documented() == REFUSALS


def test_each_script_code_is_raised_by_a_script_and_each_producer_code_by_the_python_client() -> None:
    lua = "".join(p.read_text() for p in SCRIPTS.glob("*.lua"))
    python = "".join(p.read_text() for p in (ROOT / "worker" / "fairway" / "queue").rglob("*.py"))
    for code, (who, _) in REFUSALS.items():
        if "script" in who or "enqueue" in who:
            assert re.search(rf"'{code} ", lua), f"{code}: no script refuses with it"
        if "producers" in who and code != "TOO_MANY":  # producers split batches instead of refusing
            assert f'"{code}"' in python.replace(f'"{code}": (', ""), f"{code}: the Python client never raises it"


def test_the_node_client_knows_every_code() -> None:
    union = (NODE / "index.d.ts").read_text().split("RefusalCode =")[1].split(";")[0]
    declared = set(re.findall(r"'([A-Z_]+)'", union))
    assert declared == set(REFUSALS)
    source = (NODE / "index.js").read_text()
    from_scripts = set(re.findall(r"'([A-Z_]+)'", source.split("const REFUSALS = new Set(")[1].split(")")[0]))
    assert from_scripts == {code for code, (who, _) in REFUSALS.items() if "script" in who or "enqueue" in who}
