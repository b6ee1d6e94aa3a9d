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


def test_the_readme_install_block_works_as_written(tmp_path: Path, redis_url: str) -> None:
    """clients/node/README.md's install block, run in a fresh project, then the package imported from
    there and one job enqueued: `npm install PATH` alone once failed with ERR_MODULE_NOT_FOUND 'redis'."""
    readme = (NODE_CLIENT / "README.md").read_text()
    block = readme.split("<!-- node-install:")[1].split("```sh\n", 1)[1].split("```", 1)[0]
    project = tmp_path / "app"
    project.mkdir()
    (project / "package.json").write_text('{"name": "app", "version": "1.0.0", "type": "module"}')
    env = {**os.environ, "FAIRWAY": str(NODE_CLIENT.parents[1])}
    for line in block.splitlines():
        command = line.split("  #")[0].strip()
        done = subprocess.run(command, shell=True, cwd=project, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    script = (
        "import { Client } from '@fairway/producer';"
        f"const c = await Client.connect({{ url: '{redis_url}' }});"
        "console.log(await c.enqueue('emails.send', ['a@x.io'], { kwargs: { timeout: 5 } }));"
        "await c.close();"
    )
    ran = subprocess.run(["node", "--input-type=module", "-e", script], cwd=project, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert len(ran.stdout.strip()) == 32
