"""The forwarder: this machine's loopback <-> a Unix socket <-> the API server inside the node's
network namespace (two processes: `forward.py in SOCKET HOST:PORT` inside it, `forward.py out PORT
SOCKET` outside), so no test traffic leaves loopback or the namespace."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path


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


if __name__ == "__main__":
    if sys.argv[1] == "in":
        forward_in(sys.argv[2], sys.argv[3])
    else:
        forward_out(sys.argv[2], sys.argv[3])
