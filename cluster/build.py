"""The test cluster's programs: what the machine needs to run them, and building them from the Go
modules pinned in cluster/go.mod (and cluster/helm/go.mod), once per machine."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

from common import HERE, Missing, run, say

PROGRAMS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl")
PACKAGES = {"containerd": "containerd", "runc": "runc", "/usr/lib/cni/bridge": "containernetworking-plugins"}
VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")


def check_machine() -> None:
    if os.geteuid() != 0:
        raise Missing(
            "needs root (a network namespace, containerd and a kubelet): run it as root, or skip the e2e suite"
        )
    if shutil.which("go") is None:
        raise Missing(
            "needs Go 1.26+ to build the pinned Kubernetes binaries: install it from go.dev/dl and put go on PATH"
        )
    missing = [pkg for path, pkg in PACKAGES.items() if not (Path(path).exists() or shutil.which(path))]
    for tool, pkg in (("ip", "iproute2"), ("iptables", "iptables"), ("nsenter", "util-linux")):
        if shutil.which(tool) is None:
            missing.append(pkg)
    if missing and shutil.which("apt-get"):
        say(f"installing {', '.join(missing)} from Debian's packages")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        run("apt-get", "update", "-qq", env=env)
        run("apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing, env=env)
        missing = [pkg for path, pkg in PACKAGES.items() if not (Path(path).exists() or shutil.which(path))]
    if missing:
        raise Missing(f"needs {', '.join(missing)}: apt-get install {' '.join(missing)}")


def kubernetes_version() -> str:
    """The k8s.io/kubernetes version go.mod pins (what the binaries say they are)."""
    for line in (HERE / "go.mod").read_text().splitlines():
        if line.strip().startswith("k8s.io/kubernetes v"):
            return line.split()[1]
    raise RuntimeError("cluster/go.mod pins no k8s.io/kubernetes version")


def version_ldflags() -> str:
    """A build outside Kubernetes' repository has no version stamped in: these stamp the pinned one, so
    clients (kubectl, helm's kubeVersion checks) see a real server version."""
    version = kubernetes_version()
    major, minor = version.lstrip("v").split(".")[:2]
    stamps = {"gitVersion": version, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean"}
    return " ".join(f"-X {pkg}.{k}={v}" for pkg in VERSION_PACKAGES for k, v in stamps.items())


def pins_hash() -> str:
    digest = hashlib.sha256(version_ldflags().encode())
    for path in sorted([*HERE.glob("go.*"), *HERE.glob("*/go.*"), *HERE.glob("*/*.go")]):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def bin_dir() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "fairway-cluster" / pins_hash()


def build() -> Path:
    """The pinned programs, built once per machine (Go's module and build caches make a rebuild fast)."""
    out = bin_dir()
    wanted = [*PROGRAMS, "etcd", "pause", "helm"]
    if all((out / name).exists() for name in wanted):
        say(f"the pinned binaries are built already ({out})")
        return out
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-trimpath -buildvcs=false"}
    ldflags = ["-ldflags", version_ldflags()]
    say("building kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl, etcd, pause, helm")
    run(
        "go",
        "build",
        *ldflags,
        "-o",
        str(out) + "/",
        *(f"k8s.io/kubernetes/cmd/{p}" for p in PROGRAMS),
        "./etcd",
        "./pause",
        cwd=HERE,
        env=env,
        timeout=3600,
    )
    run("go", "build", "-o", str(out / "helm"), "helm.sh/helm/v4/cmd/helm", cwd=HERE / "helm", env=env, timeout=3600)
    say(f"built in {time.monotonic() - started:.0f} s into {out}")
    return out
