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
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from build import build, check_machine
from common import API_PORT, DEFAULT_DIR, KUBERNETES_SERVICE_IP, NODE, NODE_IP, SERVICE_CIDR, Missing, run, say
from files import containerd_config, kubeconfig, kubelet_config, make_pki

SYSCTLS = ("kernel.panic", "kernel.panic_on_oops", "vm.overcommit_memory")  # the kubelet sets these: put back
FORWARD_PY = Path(__file__).resolve().parent / "forward.py"


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
    for chain in ("PREROUTING", "OUTPUT"):  # from the pods, and from the node itself
        rule = ["-d", f"{KUBERNETES_SERVICE_IP}/32", "-p", "tcp", "--dport", "443", "-j", "DNAT"]
        run(*ns, "iptables", "-t", "nat", "-A", chain, *rule, "--to-destination", f"{NODE_IP}:{API_PORT}")
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
        str(FORWARD_PY),
        "in",
        str(d / "api.sock"),
        f"{NODE_IP}:{API_PORT}",
    )
    # (the outer half runs on this machine's loopback, outside the namespace: not through `inside`)
    log = (node.logs / "forward-out.log").open("ab")
    out = subprocess.Popen(
        [sys.executable, str(FORWARD_PY), "out", str(forward), str(d / "api.sock")],
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


def main() -> int:
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
