"""Every file in examples/ through the verbs a user runs on it, as a process: `fairway validate`,
`fairway render` (its YAML read back, checked against Kubernetes' schemas, and, where kubectl exists,
`kubectl apply --dry-run=client` against the emulator's discovery) and `fairway up --dry-run`.

The render verb once printed a traceback for every shared-pool example because a newer PyYAML
stopped writing str-subclass enums; tests that rendered dicts in-process could not see it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
FAIRWAY = str(Path(sys.executable).parent / "fairway")
KUBE_VERSION = "1.37.0"


def fairway(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FAIRWAY, *args], capture_output=True, text=True, input=stdin, timeout=60, cwd=ROOT)


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 3, EXAMPLES


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_validate_accepts_the_example(example: Path) -> None:
    out = fairway("validate", "-f", str(example))
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_render_prints_valid_kubernetes_objects(example: Path) -> None:
    out = fairway("render", "-f", str(example))
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    objects = list(yaml.safe_load_all(out.stdout))
    kinds = [obj["kind"] for obj in objects]
    assert kinds and kinds.count("ConfigMap") == kinds.count("Deployment") >= 1, kinds
    for obj in objects:
        kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)
        annotations = obj["metadata"].get("annotations", {})
        assert all(type(value) is str for value in annotations.values()), annotations
    # The same YAML on stdin renders the same objects.
    again = fairway("render", "-f", "-", stdin=example.read_text())
    assert again.returncode == 0 and again.stdout == out.stdout


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_up_dry_run_plans_every_pool(example: Path) -> None:
    out = fairway("up", "--dry-run", "-f", str(example))
    assert out.returncode == 0, out.stderr
    plan = yaml.safe_load(out.stdout)
    rendered = list(yaml.safe_load_all(fairway("render", "-f", str(example)).stdout))
    deployments = [obj for obj in rendered if obj["kind"] == "Deployment"]
    pools = [pool for sup in plan for pool in sup["pools"]]
    assert len(pools) == len(deployments)
    for pool, deployment in zip(pools, deployments, strict=True):
        assert pool["processes"] == deployment["spec"]["replicas"]
        assert pool["settings"]["queues"] == [q for q in pool["serves"] if not q.startswith("@")]


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The emulator as its own process (its discovery knows the CRD, Deployments and ConfigMaps)."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed: the client-side dry run needs it")
    server = subprocess.Popen(
        [sys.executable, "-m", "support.kmock_server"],
        cwd=ROOT / "tests",
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        assert url.startswith("http://"), url
        path = tmp_path_factory.mktemp("kube") / "config"
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "emulator", "cluster": {"server": url}}],
                    "contexts": [{"name": "emulator", "context": {"cluster": "emulator", "namespace": "default"}}],
                    "current-context": "emulator",
                    "users": [{"name": "test", "user": {}}],
                }
            )
        )
        yield path
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_kubectl_takes_the_example_and_what_render_prints(example: Path, kubeconfig: Path) -> None:
    rendered = fairway("render", "-f", str(example)).stdout
    for manifest in (example.read_text(), rendered):
        out = subprocess.run(
            ["kubectl", "--kubeconfig", str(kubeconfig), "apply", "--dry-run=client", "--validate=false", "-f", "-"],
            input=manifest,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert "(dry run)" in out.stdout
