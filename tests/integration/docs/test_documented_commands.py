"""Every shell and Python block in README.md and docs/*.md says how it is tested, and the runnable
ones run as written: a real `fairway` from this environment, a real Redis of the tests' own (the
docs' `redis://127.0.0.1:6379/0` is the only thing replaced), a fresh folder holding `examples/`.
Blocks that cannot run here (a cluster, a registry, a server that runs until stopped) say why, and
their `fairway` lines are still parsed by the real parser, so a renamed verb or flag fails here."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fairway.cli import build_parser
from support.docs import ROOT, Block, marked_blocks

DOCS_REDIS = "redis://127.0.0.1:6379/0"  # what the docs say; never the URL a test uses
BLOCKS = marked_blocks()
RUNNABLE = [b for b in BLOCKS if b.marker == "runnable"]


def test_every_shell_and_python_block_says_how_it_is_tested() -> None:
    unmarked = [b.where for b in BLOCKS if b.marker is None]
    assert not unmarked, f"add <!-- runnable --> or <!-- not-run: why --> before: {unmarked}"
    reasonless = [b.where for b in BLOCKS if b.marker == "not-run" and len(b.reason) < 10]
    assert not reasonless, f"a not-run block says why: {reasonless}"
    assert len(RUNNABLE) >= 4


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.where)
def test_runnable_block_runs_as_written(block: Block, redis_url: str, tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    text = block.text.replace(DOCS_REDIS, redis_url)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "FAIRWAY_REDIS_URL": redis_url,
    }
    command = [sys.executable, "-c", text] if block.language in {"python", "py"} else ["bash", "-euo", "pipefail"]
    out = subprocess.run(
        command,
        input=None if command[0] == sys.executable else text,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, f"{block.where}\n{out.stdout}\n{out.stderr}"
    assert "Traceback" not in out.stdout + out.stderr, out.stdout + out.stderr


def _fairway_lines() -> list[tuple[str, str]]:
    found = []
    for block in BLOCKS:
        for line in block.command_lines():
            for part in re.split(r"\s*(?:&&|;|\|)\s*", line):
                if part.startswith("fairway "):
                    found.append((block.where, part))
    return found


@pytest.mark.parametrize(("where", "line"), _fairway_lines(), ids=lambda v: v if ":" in v else v[:60])
def test_every_documented_fairway_line_parses(where: str, line: str) -> None:
    words = shlex.split(re.sub(r'"\$\([^)]*\)"', "substituted-value", line))[1:]  # "$(openssl ...)" -> a word
    try:
        build_parser().parse_args(words)
    except SystemExit as exc:
        pytest.fail(f"{where}: `{line}` is not accepted by fairway (exit {exc.code})")


def test_documented_scripts_and_their_flags_exist() -> None:
    missing = []
    for block in BLOCKS:
        for line in block.command_lines():
            words = shlex.split(line)
            scripts = [w for w in words if w.startswith(("bench/", "./dev", ".ci/"))]
            for script in scripts:
                path = ROOT / script
                if not path.is_file():
                    missing.append(f"{block.where}: {script}")
                    continue
                source = path.read_text()
                flags = [w.split("=")[0] for w in words[words.index(script) + 1 :] if w.startswith("--")]
                missing += [f"{block.where}: {script} {flag}" for flag in flags if f'"{flag}"' not in source]
    assert not missing, missing
