"""A TCP proxy on loopback that delays both directions by a fixed time: Redis "one network hop away".

Every chunk read in either direction is held for `delay_s` and then forwarded in order, so a round
trip costs 2 x delay more while pipelined or concurrent requests still overlap, as on a real network
(latency, not a bandwidth cap). Threads, not asyncio: an event loop's timers wait in whole
milliseconds (epoll), which turned a 1 ms delay into 1-2 ms; `time.sleep` waits to within tens of
microseconds. Each direction of each connection has a reader (blocked in recv) and a writer that
sleeps until a chunk is due. Used by the tests (in-process) and by bench/proxy.py (its own process).
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time

from support.redis_procs import free_port


def _pump(src: socket.socket, dst: socket.socket, delay_s: float) -> None:
    """Forward src -> dst, each chunk `delay_s` after it was read; close dst's write side at EOF."""
    pending: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()

    def deliver() -> None:
        try:
            while True:
                due, data = pending.get()
                if not data:
                    break
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    threading.Thread(target=deliver, daemon=True).start()
    try:
        while data := src.recv(262144):
            pending.put((time.monotonic() + delay_s, data))
    except OSError:
        pass
    finally:
        pending.put((0.0, b""))


class DelayingProxy:
    def __init__(self, upstream_port: int, delay_s: float, port: int | None = None) -> None:
        self.upstream = ("127.0.0.1", upstream_port)
        self.delay_s = delay_s
        self.port = port or free_port()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._listener.settimeout(0.5)
        self._stopping = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _accept(self) -> None:
        while not self._stopping:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.upstream)
        except OSError:
            client.close()
            return
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        there = threading.Thread(target=_pump, args=(client, server, self.delay_s), daemon=True)
        there.start()
        _pump(server, client, self.delay_s)
        there.join()
        client.close()
        server.close()

    def serve_for(self, seconds: float) -> None:
        """Serve in this thread for `seconds` (the bench's proxy process), then close."""
        time.sleep(seconds)
        self.close()

    def close(self) -> None:
        self._stopping = True
        self._listener.close()
