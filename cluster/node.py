#!/usr/bin/env python3
"""A real single-node Kubernetes on this machine, for the e2e suite: `./dev cluster up|down`.

    python3 cluster/node.py up [--dir DIR]     build (cached), start, wait until pods can run
    python3 cluster/node.py down [--dir DIR]   stop every process `up` started (by PID) and clean up
    python3 cluster/node.py images [--dir DIR] IMAGE...   load Docker images into the node's containerd

The programs are Kubernetes' own (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
kubectl) and etcd, built from the Go modules pinned in cluster/go.mod (helm from cluster/helm/go.mod);
Debian's containerd, runc and CNI plugins run the pods. Nothing is committed but go.mod and go.sum:
the binaries are built into ~/.cache/fairway-cluster/<hash of the pins> once per machine.

The whole node (etcd, the API server with RBAC, admission and service-account tokens, the
controller-manager, the scheduler, containerd, the kubelet) lives in a network namespace of its own
(`ip netns add`): only `lo`, the node address on it, no default route; pods on a CNI bridge inside
it; one iptables DNAT rule from the `kubernetes` Service IP to the API server stands in for
kube-proxy, so pods use their normal in-cluster config. Test traffic never leaves loopback or that
namespace: this machine reaches the API server at 127.0.0.1:<port> through a forwarder that hands
each connection over a Unix socket to a twin inside the namespace.

`up` writes DIR/kubeconfig (the admin's, for kubectl and the tests), DIR/env (paths of the binaries,
the node address, the containerd socket) and prints each phase's time. It needs root, Go and the
Debian packages above (installed when missing and apt-get can); what is missing is said in one line.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
NODE = "fairway-node"
NODE_IP = "10.217.0.1"  # on lo inside the namespace: the API server, the kubelet, Redis for the pods
POD_CIDR = "10.218.0.0/24"
SERVICE_CIDR = "10.219.0.0/24"
KUBERNETES_SERVICE_IP = "10.219.0.1"
API_PORT = 6443
PAUSE_IMAGE = "docker.io/library/fairway-pause:local"
PROGRAMS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl")
PACKAGES = {"containerd": "containerd", "runc": "runc", "/usr/lib/cni/bridge": "containernetworking-plugins"}
SYSCTLS = ("kernel.panic", "kernel.panic_on_oops", "vm.overcommit_memory")  # the kubelet sets these: put back
VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
DEFAULT_DIR = Path(os.environ.get("FAIRWAY_CLUSTER_DIR", "/tmp/fairway-cluster"))


class Missing(Exception):
    """What this machine lacks for a cluster, in one line with the fix."""


def say(text: str) -> None:
    print(f"cluster: {text}", file=sys.stderr, flush=True)


def run(*cmd: str, check: bool = True, **kw: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} exited {done.returncode}: {(done.stderr or done.stdout)[-800:]}")
    return done  # type: ignore[no-any-return]


# -- what the machine needs ----------------------------------------------------------------------


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


# -- building ------------------------------------------------------------------------------------


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


# -- the node's files ----------------------------------------------------------------------------


def openssl(*args: str) -> None:
    run("openssl", *args)


def make_pki(pki: Path) -> None:
    """A CA, the API server's serving certificate, a client certificate per component, the
    service-account key pair."""
    pki.mkdir(parents=True, exist_ok=True)
    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "30",
        "-subj",
        "/CN=fairway-test-ca",
        "-keyout",
        str(pki / "ca.key"),
        "-out",
        str(pki / "ca.crt"),
    )
    names = ["kubernetes", "kubernetes.default", "kubernetes.default.svc", "localhost"]
    addresses = ["127.0.0.1", NODE_IP, KUBERNETES_SERVICE_IP]
    sans = ",".join([*(f"DNS:{n}" for n in names), *(f"IP:{a}" for a in addresses)])
    certs = {
        "apiserver": ("/CN=kube-apiserver", sans),
        "admin": ("/O=system:masters/CN=fairway-test-admin", None),
        "apiserver-kubelet": ("/O=system:masters/CN=kube-apiserver-kubelet-client", None),
        "controller-manager": ("/CN=system:kube-controller-manager", None),
        "scheduler": ("/CN=system:kube-scheduler", None),
        "kubelet": (f"/O=system:nodes/CN=system:node:{NODE}", None),
    }
    for name, (subject, alt) in certs.items():
        key, csr, crt = (pki / f"{name}.{ext}" for ext in ("key", "csr", "crt"))
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", str(key), "-out", str(csr))
        ext = pki / f"{name}.ext"
        ext.write_text(f"subjectAltName={alt}\n" if alt else "extendedKeyUsage=clientAuth\n")
        openssl(
            "x509",
            "-req",
            "-in",
            str(csr),
            "-CA",
            str(pki / "ca.crt"),
            "-CAkey",
            str(pki / "ca.key"),
            "-CAcreateserial",
            "-days",
            "30",
            "-extfile",
            str(ext),
            "-out",
            str(crt),
        )
    openssl("genrsa", "-out", str(pki / "sa.key"), "2048")
    openssl("rsa", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub"))


def kubeconfig(path: Path, server: str, pki: Path, user: str) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fairway", "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")}}],
        "users": [
            {
                "name": user,
                "user": {"client-certificate": str(pki / f"{user}.crt"), "client-key": str(pki / f"{user}.key")},
            }
        ],
        "contexts": [{"name": "fairway", "context": {"cluster": "fairway", "user": user}}],
        "current-context": "fairway",
    }
    path.write_text(json.dumps(doc, indent=2))  # (JSON is YAML)


def containerd_config(d: Path) -> Path:
    c = d / "containerd"
    c.mkdir(parents=True, exist_ok=True)
    config = c / "config.toml"
    config.write_text(f"""version = 2
root = "{c}/root"
state = "{c}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{c}/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{d}/cni"
""")
    cni = d / "cni"
    cni.mkdir(exist_ok=True)
    (cni / "10-fairway.conflist").write_text(
        json.dumps(
            {
                "cniVersion": "1.0.0",
                "name": "fairway",
                "plugins": [
                    {
                        "type": "bridge",
                        "bridge": "cni0",
                        "isGateway": True,
                        "ipMasq": False,
                        "hairpinMode": True,
                        "ipam": {
                            "type": "host-local",
                            "ranges": [[{"subnet": POD_CIDR}]],
                            "routes": [{"dst": "0.0.0.0/0"}],
                            "dataDir": str(d / "cni-ipam"),
                        },
                    },
                    {"type": "portmap", "capabilities": {"portMappings": True}},
                ],
            },
            indent=2,
        )
    )
    return config


def kubelet_config(d: Path, pki: Path) -> Path:
    k = d / "kubelet"
    k.mkdir(parents=True, exist_ok=True)
    (d / "resolv.conf").write_text(f"nameserver {NODE_IP}\n")
    config = k / "config.json"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "kubelet.config.k8s.io/v1beta1",
                "kind": "KubeletConfiguration",
                "cgroupDriver": "cgroupfs",
                "failSwapOn": False,
                "failCgroupV1": False,
                "containerRuntimeEndpoint": f"unix://{d}/containerd/containerd.sock",
                "address": NODE_IP,
                "readOnlyPort": 0,
                "healthzBindAddress": "127.0.0.1",
                "authentication": {
                    "anonymous": {"enabled": False},
                    "webhook": {"enabled": True},
                    "x509": {"clientCAFile": str(pki / "ca.crt")},
                },
                "authorization": {"mode": "Webhook"},
                "clusterDomain": "cluster.local",
                "resolvConf": str(d / "resolv.conf"),
                "podLogsDir": str(d / "pod-logs"),
                # A test machine's disk is whatever it is: no eviction and no image GC (images cannot be pulled again).
                "evictionHard": {"nodefs.available": "0%", "nodefs.inodesFree": "0%", "imagefs.available": "0%"},
                "imageGCHighThresholdPercent": 100,
                "serializeImagePulls": False,
            },
            indent=2,
        )
    )
    return config


# -- processes -----------------------------------------------------------------------------------


class Node:
    def __init__(self, d: Path) -> None:
        self.dir = d
        self.netns = f"fairway-{hashlib.sha1(str(d).encode()).hexdigest()[:8]}"
        self.pids = d / "pids"
        self.logs = d / "logs"
        self.pki = d / "pki"

    def inside(self, *cmd: str) -> list[str]:
        """A command run in the node's network namespace (and nothing else: it shares this machine's mounts,
        so the kubelet's volume mounts are what containerd sees)."""
        return ["nsenter", f"--net=/run/netns/{self.netns}", *cmd]

    def start(self, name: str, *cmd: str) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.pids.mkdir(parents=True, exist_ok=True)
        log = (self.logs / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            self.inside(*cmd), stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
        )
        (self.pids / f"{name}.pid").write_text(str(proc.pid))

    def alive(self, name: str) -> bool:
        pid = self._pid(name)
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True

    def _pid(self, name: str) -> int | None:
        path = self.pids / f"{name}.pid"
        return int(path.read_text()) if path.exists() else None

    def stop(self, name: str, grace_s: float = 10.0) -> None:
        pid = self._pid(name)
        if pid is None:
            return
        try:
            os.killpg(pid, signal.SIGTERM)
        except OSError:
            (self.pids / f"{name}.pid").unlink(missing_ok=True)
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except OSError:
                break
            time.sleep(0.1)
        else:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        (self.pids / f"{name}.pid").unlink(missing_ok=True)

    def log_tail(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace")[-1500:] if path.exists() else "(no log)"

    def wait(self, what: str, check: Callable[[], bool], timeout_s: float, name: str | None = None) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if check():
                return
            if name and not self.alive(name):
                raise RuntimeError(f"{name} exited while waiting for {what}:\n{self.log_tail(name)}")
            time.sleep(0.2)
        raise RuntimeError(
            f"timed out after {timeout_s:.0f} s waiting for {what}" + (f":\n{self.log_tail(name)}" if name else "")
        )


# -- up ------------------------------------------------------------------------------------------


def up(d: Path) -> None:
    check_machine()
    if (d / "state.json").exists():
        raise Missing(f"a cluster already runs from {d}: ./dev cluster down first")
    timings: dict[str, float] = {}
    clock = time.monotonic()
    bins = build()
    timings["build (cached after the first)"] = time.monotonic() - clock
    d.mkdir(parents=True, exist_ok=True)
    node = Node(d)
    state = {
        "netns": node.netns,
        "netns_before": network_namespaces(),  # the pods' own (cni-*) are removed at down
        "sysctls": {k: read_sysctl(k) for k in SYSCTLS},
        "bin": str(bins),
    }
    (d / "state.json").write_text(json.dumps(state))
    phase = time.monotonic()
    make_pki(node.pki)
    run("ip", "netns", "add", node.netns)
    ns = ["ip", "netns", "exec", node.netns]
    run(*ns, "ip", "link", "set", "lo", "up")
    run(*ns, "ip", "addr", "add", f"{NODE_IP}/32", "dev", "lo")
    run(
        *ns,
        "iptables",
        "-t",
        "nat",
        "-A",
        "PREROUTING",
        "-d",
        f"{KUBERNETES_SERVICE_IP}/32",
        "-p",
        "tcp",
        "--dport",
        "443",
        "-j",
        "DNAT",
        "--to-destination",
        f"{NODE_IP}:{API_PORT}",
    )
    run(
        *ns,
        "iptables",
        "-t",
        "nat",
        "-A",
        "OUTPUT",
        "-d",
        f"{KUBERNETES_SERVICE_IP}/32",
        "-p",
        "tcp",
        "--dport",
        "443",
        "-j",
        "DNAT",
        "--to-destination",
        f"{NODE_IP}:{API_PORT}",
    )
    run(*ns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
    timings["certificates and network"] = time.monotonic() - phase

    phase = time.monotonic()
    node.start("etcd", str(bins / "etcd"), "--data-dir", str(d / "etcd"))
    node.wait("etcd", lambda: "etcd ready" in node.log_tail("etcd"), 60, "etcd")
    pki = node.pki
    node.start(
        "kube-apiserver",
        str(bins / "kube-apiserver"),
        "--etcd-servers=http://127.0.0.1:2379",
        "--bind-address=0.0.0.0",
        f"--secure-port={API_PORT}",
        f"--advertise-address={NODE_IP}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--tls-cert-file={pki}/apiserver.crt",
        f"--tls-private-key-file={pki}/apiserver.key",
        f"--client-ca-file={pki}/ca.crt",
        f"--kubelet-client-certificate={pki}/apiserver-kubelet.crt",
        f"--kubelet-client-key={pki}/apiserver-kubelet.key",
        "--kubelet-preferred-address-types=InternalIP",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-account-key-file={pki}/sa.pub",
        f"--service-account-signing-key-file={pki}/sa.key",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        "--endpoint-reconciler-type=none",
        "--allow-privileged=true",
    )
    forward = free_port()
    node.start(
        "forward-in",
        sys.executable,
        str(Path(__file__).resolve()),
        "_forward-in",
        str(d / "api.sock"),
        f"{NODE_IP}:{API_PORT}",
    )
    # (the outer half runs on this machine's loopback, outside the namespace: not through `inside`)
    log = (node.logs / "forward-out.log").open("ab")
    out = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "_forward-out", str(forward), str(d / "api.sock")],
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    (node.pids / "forward-out.pid").write_text(str(out.pid))
    admin = d / "kubeconfig"
    kubeconfig(admin, f"https://127.0.0.1:{forward}", pki, "admin")
    node.wait("the API server's /readyz", lambda: api_ready(forward, pki), 120, "kube-apiserver")
    timings["etcd and the API server ready"] = time.monotonic() - phase

    phase = time.monotonic()
    inner = f"https://{NODE_IP}:{API_PORT}"
    for user in ("controller-manager", "scheduler", "kubelet"):
        kubeconfig(d / f"{user}.kubeconfig", inner, pki, user)
    cm = d / "controller-manager.kubeconfig"
    node.start(
        "kube-controller-manager",
        str(bins / "kube-controller-manager"),
        f"--kubeconfig={cm}",
        f"--authentication-kubeconfig={cm}",
        f"--authorization-kubeconfig={cm}",
        f"--service-account-private-key-file={pki}/sa.key",
        f"--root-ca-file={pki}/ca.crt",
        "--use-service-account-credentials=true",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        f"--cluster-signing-cert-file={pki}/ca.crt",
        f"--cluster-signing-key-file={pki}/ca.key",
    )
    sched = d / "scheduler.kubeconfig"
    node.start(
        "kube-scheduler",
        str(bins / "kube-scheduler"),
        f"--kubeconfig={sched}",
        f"--authentication-kubeconfig={sched}",
        f"--authorization-kubeconfig={sched}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
    )
    node.start("containerd", "containerd", "--config", str(containerd_config(d)))
    sock = d / "containerd" / "containerd.sock"
    node.wait("containerd's socket", sock.exists, 30, "containerd")
    load_pause(bins, sock)
    node.start(
        "kubelet",
        str(bins / "kubelet"),
        f"--config={kubelet_config(d, pki)}",
        f"--kubeconfig={d / 'kubelet.kubeconfig'}",
        f"--root-dir={d / 'kubelet' / 'root'}",
        f"--cert-dir={d / 'kubelet' / 'pki'}",
        f"--hostname-override={NODE}",
        f"--node-ip={NODE_IP}",
    )
    kubectl = [str(bins / "kubectl"), "--kubeconfig", str(admin)]

    def node_ready() -> bool:
        got = run(
            *kubectl, "get", "node", NODE, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}", check=False
        )
        return got.stdout.strip() == "True"

    node.wait("the node to be Ready", node_ready, 180, "kubelet")
    node.wait(
        "the default ServiceAccount",
        lambda: run(*kubectl, "get", "serviceaccount", "default", check=False).returncode == 0,
        60,
        "kube-controller-manager",
    )
    timings["controllers, containerd and the node Ready"] = time.monotonic() - phase
    (d / "env").write_text(
        "".join(
            f"{k}={v}\n"
            for k, v in {
                "KUBECONFIG": admin,
                "CLUSTER_BIN": bins,
                "NODE_IP": NODE_IP,
                "CONTAINERD_SOCK": sock,
                "NETNS": node.netns,
                "CLUSTER_DIR": d,
            }.items()
        )
    )
    for label, seconds in timings.items():
        say(f"{label}: {seconds:.1f} s")
    say(f"up in {time.monotonic() - clock:.1f} s; KUBECONFIG={admin}")


def load_pause(bins: Path, sock: Path) -> None:
    """The sandbox image: the pause binary alone in an image, imported into containerd."""
    load_images(sock, [], extra=("fairway-pause:local", bins / "pause"))


def load_images(sock: Path, images: list[str], extra: tuple[str, Path] | None = None) -> None:
    """Docker images (and `extra`: a tag and a static binary made into an image of its own) into the node."""
    if extra is not None:
        tag, binary = extra
        tar = sock.parent / "pause.tar"
        run("tar", "-C", str(binary.parent), "-cf", str(tar), binary.name)
        run("docker", "import", "--change", f'ENTRYPOINT ["/{binary.name}"]', str(tar), tag)
        images = [*images, tag]
    save = subprocess.Popen(["docker", "save", *images], stdout=subprocess.PIPE)
    done = subprocess.run(
        ["ctr", "--address", str(sock), "-n", "k8s.io", "images", "import", "-"],
        stdin=save.stdout,
        capture_output=True,
        text=True,
    )
    save.wait()
    if save.returncode or done.returncode:
        raise RuntimeError(f"loading {' '.join(images)} into containerd failed: {done.stderr[-500:]}")


def api_ready(port: int, pki: Path) -> bool:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=ctx, timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def network_namespaces() -> list[str]:
    return [line.split()[0] for line in run("ip", "netns", "list").stdout.splitlines() if line.strip()]


def read_sysctl(name: str) -> str:
    return Path("/proc/sys", *name.split(".")).read_text().strip()


# -- down ----------------------------------------------------------------------------------------


def down(d: Path, keep_logs: Path | None = None) -> None:
    state_file = d / "state.json"
    if not state_file.exists():
        say(f"no cluster runs from {d}")
        return
    state = json.loads(state_file.read_text())
    node = Node(d)
    node.stop("kubelet")
    sock = d / "containerd" / "containerd.sock"
    if sock.exists():
        ctr = ["ctr", "--address", str(sock), "-n", "k8s.io"]
        tasks = run(*ctr, "tasks", "ls", "-q", check=False).stdout.split()
        for task in tasks:
            run(*ctr, "tasks", "kill", "-s", "SIGKILL", task, check=False)
        time.sleep(0.5 if tasks else 0)
        for task in tasks:
            run(*ctr, "tasks", "delete", "-f", task, check=False)
        for container in run(*ctr, "containers", "ls", "-q", check=False).stdout.split():
            run(*ctr, "containers", "delete", container, check=False)
    for name in (
        "containerd",
        "kube-scheduler",
        "kube-controller-manager",
        "forward-out",
        "forward-in",
        "kube-apiserver",
        "etcd",
    ):
        node.stop(name)
    for mount in reversed(mounts_under(d)):
        run("umount", "-l", mount, check=False)
    run("ip", "netns", "delete", state["netns"], check=False)
    for pods_netns in set(network_namespaces()) - set(state.get("netns_before", [])):
        if pods_netns.startswith("cni-"):
            run("ip", "netns", "delete", pods_netns, check=False)
    for name, value in state.get("sysctls", {}).items():
        run("sysctl", "-q", "-w", f"{name}={value}", check=False)
    remove_cgroups()
    if keep_logs is not None and (d / "logs").exists():
        shutil.rmtree(keep_logs, ignore_errors=True)
        shutil.move(str(d / "logs"), keep_logs)
    shutil.rmtree(d, ignore_errors=True)
    say("down: every process stopped, the namespace and the node's files removed")


def mounts_under(d: Path) -> list[str]:
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        target = line.split()[1].replace("\\040", " ")
        if target.startswith(str(d) + "/"):
            out.append(target)
    return sorted(out)


def remove_cgroups() -> None:
    """The kubelet's pod cgroups (kubepods*), deepest first, in every hierarchy."""
    root = Path("/sys/fs/cgroup")
    for hierarchy in root.iterdir() if root.exists() else []:
        for top in hierarchy.glob("kubepods*"):
            for path in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                with contextlib.suppress(OSError):
                    path.rmdir()
            with contextlib.suppress(OSError):
                top.rmdir()


# -- the forwarder: loopback on this machine <-> a Unix socket <-> the API server in the namespace ----


def pump(a: socket.socket, b: socket.socket) -> None:
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def serve(listener: socket.socket, connect: Callable[[], socket.socket]) -> None:
    while True:
        client, _ = listener.accept()
        try:
            upstream = connect()
        except OSError:
            client.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


def forward_in(path: str, target: str) -> None:
    host, port = target.rsplit(":", 1)
    Path(path).unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(128)
    serve(listener, lambda: socket.create_connection((host, int(port))))


def forward_out(port: str, path: str) -> None:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(port)))
    listener.listen(128)

    def connect() -> socket.socket:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        return s

    serve(listener, connect)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_forward-in":
        forward_in(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "_forward-out":
        forward_out(sys.argv[2], sys.argv[3])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["up", "down", "build", "images"])
    parser.add_argument("images", nargs="*", help="images: the Docker images to load into the node")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"the node's files (default {DEFAULT_DIR})")
    args = parser.parse_args()
    try:
        if args.action == "up":
            try:
                up(args.dir)
            except Missing:
                raise  # (nothing was started)
            except BaseException:
                if (args.dir / "state.json").exists():
                    kept = args.dir.with_name(f"{args.dir.name}-failed-logs")
                    say(f"start-up failed: stopping what was started; its logs are in {kept}")
                    down(args.dir, keep_logs=kept)
                raise
        elif args.action == "down":
            down(args.dir)
        elif args.action == "build":
            check_machine()
            say(f"binaries in {build()}")
        else:
            load_images(args.dir / "containerd" / "containerd.sock", args.images)
    except Missing as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
