"""Liveness and readiness endpoints served from a thread of their own, for the worker and the operator.

Each probe reads what its process keeps in memory (the loop's last tick): no request to Redis or the
API server per probe, and no log line per probe (kubelets probe every few seconds)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve_probes(host: str, port: int, live: Callable[[], bool], ready: Callable[[], bool]) -> ThreadingHTTPServer:
    """`/healthz` (also `/livez`) answers 200 while `live()`, `/readyz` 200 while `ready()`, else 503.
    OSError when the port cannot be bound."""

    class Probe(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path in ("/healthz", "/livez"):
                ok, what = live(), "alive"
            elif path == "/readyz":
                ok, what = ready(), "ready"
            else:
                self.send_error(404)
                return
            body = (what if ok else f"not {what}").encode() + b"\n"
            self.send_response(200 if ok else 503)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # (no line per probe)

    server = ThreadingHTTPServer((host, port), Probe)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="fairway-probes", daemon=True).start()
    return server
