"""Fairway's image for the image tests: a Docker engine (started by .ci/docker-engine where it can be),
a base image (FAIRWAY_IMAGE_BASE, else a Debian base made locally with mmdebstrap, since no image
registry may be reachable), the image built from the Dockerfile as users build it, and `docker run`
flags that do what a pod spec's securityContext, env and volumes do."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "fairway:test"
LOCAL_BASE = "fairway-base:bookworm"
CA_DIR = Path("/usr/local/share/ca-certificates")  # this machine's extra CAs: pip in the build needs them
RUN_TIMEOUT_S = 120


def docker(*args: str, timeout: float = RUN_TIMEOUT_S, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and out.returncode != 0:
        raise AssertionError(f"docker {' '.join(args[:3])}... exited {out.returncode}:\n{out.stdout}\n{out.stderr}")
    return out


def engine_or_skip() -> None:
    if shutil.which("docker") is None:
        pytest.skip("no docker command: install Docker (./dev image, or .ci/docker-engine as root on Debian)")
    info = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30)
    if info.returncode != 0:
        pytest.skip(f"no running Docker engine (.ci/docker-engine starts one as root on Debian): {info.stderr[-200:]}")


def base_image() -> str:
    """FAIRWAY_IMAGE_BASE when set (e.g. the public python:3.11-slim where a registry is reachable),
    else a Debian bookworm base with Python 3.11 made here by mmdebstrap, once per machine."""
    if os.environ.get("FAIRWAY_IMAGE_BASE"):
        return os.environ["FAIRWAY_IMAGE_BASE"]
    if docker("image", "inspect", LOCAL_BASE, check=False).returncode == 0:
        return LOCAL_BASE
    if shutil.which("mmdebstrap") is None:
        pytest.skip("no base image: set FAIRWAY_IMAGE_BASE, or install mmdebstrap to build one from Debian's packages")
    hooks = []
    certs = sorted(str(p) for p in CA_DIR.glob("*.crt")) if CA_DIR.is_dir() else []
    if certs:
        hooks = [
            f"--customize-hook=copy-in {' '.join(certs)} {CA_DIR}",
            '--customize-hook=chroot "$1" update-ca-certificates',
        ]
    debootstrap = subprocess.Popen(
        ["mmdebstrap", "--variant=minbase", "--include=python3,python3-venv,python-is-python3,ca-certificates",
         *hooks, "bookworm", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    imported = subprocess.run(["docker", "import", "-", LOCAL_BASE], stdin=debootstrap.stdout, capture_output=True)
    debootstrap.wait(timeout=600)
    assert debootstrap.returncode == 0 and imported.returncode == 0, imported.stderr
    return LOCAL_BASE


def build_image() -> dict[str, Any]:
    """`docker build` of the repository's Dockerfile on the chosen base; returns the tag, seconds, size."""
    base = base_image()
    started = time.monotonic()
    docker("build", "--network", "host", "--build-arg", f"BASE={base}", "-t", IMAGE, str(ROOT), timeout=900)
    seconds = time.monotonic() - started
    size = int(docker("image", "inspect", "-f", "{{.Size}}", IMAGE).stdout.strip())
    sys.__stderr__.write(f"\nimage {IMAGE} on {base}: {size / 1e6:.0f} MB, built in {seconds:.0f} s\n")
    return {"tag": IMAGE, "base": base, "seconds": seconds, "size_bytes": size}


def pod_flags(
    pod_spec: Mapping[str, Any],
    container: Mapping[str, Any],
    volumes: Mapping[str, Path],
    field_refs: Mapping[str, str],
) -> list[str]:
    """`docker run` flags for what the pod spec asks of the runtime: its user and group, a read-only
    root, dropped capabilities, no privilege escalation, its env (field references filled in from
    `field_refs`, as the downward API would), and its volumes (`volumes`: a host folder for each
    ConfigMap volume; emptyDirs become tmpfs)."""
    pod_security, security = pod_spec.get("securityContext", {}), container.get("securityContext", {})
    flags = ["--user", f"{pod_security['runAsUser']}:{pod_security.get('runAsGroup', pod_security['runAsUser'])}"]
    if security.get("readOnlyRootFilesystem"):
        flags.append("--read-only")
    flags += [f"--cap-drop={cap}" for cap in security.get("capabilities", {}).get("drop", [])]
    if security.get("allowPrivilegeEscalation") is False:
        flags += ["--security-opt", "no-new-privileges"]
    for env in container.get("env", []):
        if "value" in env:
            flags += ["-e", f"{env['name']}={env['value']}"]
        elif "fieldRef" in env.get("valueFrom", {}):
            flags += ["-e", f"{env['name']}={field_refs[env['valueFrom']['fieldRef']['fieldPath']]}"]
    kinds = {v["name"]: v for v in pod_spec.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        volume = kinds[mount["name"]]
        if "emptyDir" in volume:
            flags += ["--tmpfs", f"{mount['mountPath']}:rw,size=64m,uid={pod_security['runAsUser']}"]
        else:
            flags += ["-v", f"{volumes[mount['name']]}:{mount['mountPath']}:{'ro' if mount.get('readOnly') else 'rw'}"]
    return flags
