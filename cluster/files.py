"""The node's files: its certificates and kubeconfigs, containerd's and the CNI's configuration, the
kubelet's configuration."""

from __future__ import annotations

import json
from pathlib import Path

from common import KUBERNETES_SERVICE_IP, NODE, NODE_IP, PAUSE_IMAGE, POD_CIDR, run


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
