"""Real redis-server processes for tests: standalone servers and a 3-node Redis Cluster on free loopback ports.

Never touches port 6379 or any Redis the machine already runs.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def _is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(cluster: bool = False) -> int:
    """A free loopback port; for a cluster node, also its bus port (port + 10000), so below 55535."""
    if not cluster:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
        return port
    for _ in range(200):
        port = random.randint(20000, 45000)
        if port != 6379 and _is_free(port) and _is_free(port + 10000):
            return port
    raise RuntimeError("no free port pair for a cluster node")


class RedisProcess:
    def __init__(self, *, cluster: bool = False, persistent: bool = False, port: int | None = None) -> None:
        self.port = port or free_port(cluster)
        self.dir = Path(tempfile.mkdtemp(prefix=f"fairway-redis-{self.port}-"))
        self.cluster = cluster
        self.persistent = persistent
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisProcess:
        args = [
            REDIS_SERVER,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.dir),
            "--save",
            "",
            "--daemonize",
            "no",
            "--logfile",
            str(self.dir / "redis.log"),
        ]
        if self.persistent:
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            args += ["--appendonly", "no"]
        if self.cluster:
            args += [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                str(self.dir / "nodes.conf"),
                "--cluster-node-timeout",
                "2000",
            ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(port=self.port, socket_timeout=1).ping()
                return self
            except (redis.ConnectionError, redis.exceptions.BusyLoadingError):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server on {self.port} did not start") from None
                time.sleep(0.05)

    def stop(self, kill: bool = False) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill() if kill else self.proc.terminate()
            self.proc.wait(10)
        self.proc = None

    def cleanup(self) -> None:
        self.stop(kill=True)
        shutil.rmtree(self.dir, ignore_errors=True)


class RedisCluster:
    """Three masters, slots split evenly, no replicas: the smallest real cluster."""

    def __init__(self) -> None:
        self.nodes = [RedisProcess(cluster=True) for _ in range(3)]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def start(self) -> RedisCluster:
        for node in self.nodes:
            node.start()
        clients = [redis.Redis(port=n.port) for n in self.nodes]
        bounds = [0, 5461, 10923, 16384]
        for index, client in enumerate(clients):
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", bounds[index], bounds[index + 1] - 1)
        for node in self.nodes[1:]:
            clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", node.port)
        deadline = time.monotonic() + 20
        while not all(
            c.cluster("info")["cluster_state"] == "ok" and int(c.cluster("info")["cluster_known_nodes"]) == 3
            for c in clients
        ):
            if time.monotonic() > deadline:
                raise RuntimeError("the Redis Cluster did not become ready")
            time.sleep(0.1)
        return self

    def flush(self) -> None:
        for node in self.nodes:
            redis.Redis(port=node.port).flushall()

    def cleanup(self) -> None:
        for node in self.nodes:
            node.cleanup()
