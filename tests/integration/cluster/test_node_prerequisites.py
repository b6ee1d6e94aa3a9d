"""`./dev cluster up` where it cannot run says so in one line naming what is missing (exit 2), and
starts nothing: without root, and without Go."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NODE_PY = Path(__file__).resolve().parents[3] / "cluster" / "node.py"


def up(tmp_path: Path, *, env: dict[str, str], user: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [*(user or []), sys.executable, str(NODE_PY), "--dir", str(tmp_path / "node"), "up"]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    return line


def test_without_root_it_says_so(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("no setpriv to drop root")
        tmp_path.chmod(0o777)
        done = up(tmp_path, env=dict(os.environ), user=["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
    else:
        done = up(tmp_path, env=dict(os.environ))
    assert one_line(done).startswith("cluster: needs root")
    assert not (tmp_path / "node").exists(), "nothing started"


def test_without_go_it_says_so(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the root check comes first: this case needs root")
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "go").exists())
    done = up(tmp_path, env={**os.environ, "PATH": path})
    line = one_line(done)
    assert line.startswith("cluster: needs Go") and "go.dev/dl" in line
    assert not (tmp_path / "node").exists()
