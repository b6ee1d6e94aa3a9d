"""A loopback TCP proxy in front of a real Redis that cuts the connection when a chosen script is
called: before the request reaches Redis (the call never ran), or after Redis ran it and before the
reply reaches the worker (it ran; the worker cannot know). What a dropped connection does to a worker
in the middle of settling, reproduced on demand."""

from __future__ import annotations

import contextlib
import random
import socket
import threading
import time
from dataclasses import dataclass

from fairway.queue.protocol.scripts import source
from support.redis_procs import free_port


def script_sha(name: str) -> bytes:
    import hashlib

    return hashlib.sha1(source(name).encode()).hexdigest().encode()


@dataclass
class Cut:
    needle: bytes  # bytes of the request that trigger it (a script's sha: EVALSHA names it)
    skip: int = 0  # let this many matching requests through first
    times: int = 1  # then cut this many
    after_reply: bool = False  # False: before Redis sees it; True: Redis runs it, the reply is lost
    probability: float = 1.0  # of cutting each matching request past `skip` (seeded: repeatable)
    seen: int = 0
    cut: int = 0


class CuttingProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = free_port()
        self.cuts: list[Cut] = []
        self._rng = random.Random(21)
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def cut_when(
        self, script: str, *, skip: int = 0, times: int = 1, after_reply: bool = False, probability: float = 1.0
    ) -> Cut:
        rule = Cut(script_sha(script), skip, times, after_reply, probability)
        with self._lock:
            self.cuts.append(rule)
        return rule

    def close(self) -> None:
        self._stopping = True
        with contextlib.suppress(OSError):
            self._server.close()

    def _accept(self) -> None:
        while not self._stopping:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            threading.Thread(target=self._serve, args=(client, upstream), daemon=True).start()

    def _decide(self, data: bytes) -> Cut | None:
        with self._lock:
            for rule in self.cuts:
                if rule.needle in data:
                    rule.seen += 1
                    if rule.seen > rule.skip and rule.cut < rule.times and self._rng.random() < rule.probability:
                        rule.cut += 1
                        return rule
        return None

    def _serve(self, client: socket.socket, upstream: socket.socket) -> None:
        def close() -> None:
            for s in (client, upstream):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    s.close()

        swallow = threading.Event()  # set: replies from here on are dropped, never forwarded

        def replies() -> None:
            try:
                while data := upstream.recv(65536):
                    if swallow.is_set():
                        break
                    client.sendall(data)
            except OSError:
                pass
            close()

        threading.Thread(target=replies, daemon=True).start()
        try:
            while data := client.recv(65536):
                rule = self._decide(data)
                if rule is not None and not rule.after_reply:
                    break
                if rule is not None:  # after_reply: Redis runs it, its reply is dropped with the connection
                    swallow.set()
                    upstream.sendall(data)
                    time.sleep(0.2)
                    break
                upstream.sendall(data)
        except OSError:
            pass
        close()
