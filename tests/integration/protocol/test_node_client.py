"""The Node.js producer (clients/node): its own tests (the conformance vectors, server-side refusals,
and jobs run by a real Python worker) against this suite's Redis, its types, and its scripts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fairway.queue.protocol import scripts

NODE_CLIENT = Path(__file__).resolve().parents[3] / "clients" / "node"
FAIRWAY_BIN = Path(sys.executable).with_name("fairway")


def node_ready() -> None:
    """`npm ci` from the committed lockfile, once (./dev test does it before the suite)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("Node.js and npm are needed for clients/node (./dev test installs them)")
    if not (NODE_CLIENT / "node_modules" / "redis").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=NODE_CLIENT, check=True, capture_output=True)


@pytest.mark.parametrize("name", scripts.PRODUCER_SCRIPTS)
def test_the_node_package_ships_the_complete_scripts(name: str) -> None:
    shipped = (NODE_CLIENT / "scripts" / f"{name}.lua").read_text()
    assert shipped == scripts.complete_source(name), f"refresh them: fairway scripts --out {NODE_CLIENT / 'scripts'}"


def test_the_node_producer_passes_its_tests_against_real_redis_and_a_python_worker(redis_url: str) -> None:
    node_ready()
    env = {**os.environ, "REDIS_URL": redis_url, "FAIRWAY_BIN": str(FAIRWAY_BIN)}
    result = subprocess.run(
        ["node", "--test", "test/producer.test.js"],
        cwd=NODE_CLIENT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = [line for line in result.stdout.splitlines() if line.startswith(("# pass", "# fail", "not ok"))]
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "# fail 0" in summary and any(line.startswith("# pass") and int(line.split()[-1]) >= 30 for line in summary)


def test_the_node_producer_type_checks() -> None:
    node_ready()
    result = subprocess.run(["npx", "tsc", "-p", "."], cwd=NODE_CLIENT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_fairway_scripts_prints_and_writes_the_complete_scripts(tmp_path: Path) -> None:
    printed = subprocess.run([FAIRWAY_BIN, "scripts"], capture_output=True, text=True, check=True).stdout
    assert printed == "".join(scripts.complete_source(name) for name in scripts.PRODUCER_SCRIPTS)
    written = subprocess.run(
        [FAIRWAY_BIN, "scripts", "--out", str(tmp_path / "lua")], capture_output=True, text=True, check=True
    ).stdout.split()
    assert written == [str(tmp_path / "lua" / f"{name}.lua") for name in scripts.PRODUCER_SCRIPTS]
    assert all(Path(path).read_text() == scripts.complete_source(Path(path).stem) for path in written)
    blocked = tmp_path / "file"
    blocked.write_text("")
    refused = subprocess.run([FAIRWAY_BIN, "scripts", "--out", str(blocked)], capture_output=True, text=True)
    assert refused.returncode == 2 and "cannot write" in refused.stderr and "Traceback" not in refused.stderr
