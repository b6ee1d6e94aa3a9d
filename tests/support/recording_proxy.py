"""A plain-HTTP front for any Kubernetes API server that logs each request as RBAC sees it (like
`kubectl proxy`, which it resembles: it forwards with the upstream kubeconfig's credentials). The
operator scale benchmark puts it between the operator and the server, so requests are counted by
verb and resource the same way against the emulator and against a real API server; a test checks that
it classifies requests as the emulator's own log does.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import kubernetes
from aiohttp import web

from support.kopf_kmock import Requested, required_name

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te", "upgrade"}


def classify(method: str, path: str, query: dict[str, str], agent: str) -> Requested:
    """A request path and method as RBAC names them: /api/v1/... is the core group, /apis/GROUP/VERSION/...
    the others; namespaces/NS/RESOURCE[/NAME[/SUBRESOURCE]] or RESOURCE[/NAME[/SUBRESOURCE]]."""
    parts = [p for p in urlsplit(path).path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return Requested(method.lower(), "", "", None, None, agent)  # discovery, /version
    namespace = None
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return Requested(method.lower(), group, "", None, None, agent)  # discovery of a group version
    resource, name = rest[0], rest[1] if len(rest) > 1 else None
    sub = f"/{rest[2]}" if len(rest) > 2 else ""
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method.upper(), "get")
    if verb == "get" and name is None:
        verb = "watch" if query.get("watch") in ("true", "1") else "list"
        try:
            name = required_name(query.get("fieldSelector", ""))  # (authorized by that name)
        except ValueError:
            name = None
    return Requested(verb, group, resource + sub, namespace, name, agent)


@dataclass(frozen=True)
class Logged:
    at: float  # time.monotonic() when it arrived
    request: Requested


class RecordingProxy:
    """Serves http://127.0.0.1:PORT in a thread of its own; `log` holds every request in arrival order."""

    def __init__(self, upstream: kubernetes.client.Configuration) -> None:
        self.upstream = upstream
        self.log: list[Logged] = []
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="recording-proxy")

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the recording proxy did not start")
        return self

    def __exit__(self, *_: Any) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _ssl(self) -> ssl.SSLContext | bool:
        up = self.upstream
        if not up.host.startswith("https"):
            return False
        context = ssl.create_default_context(cafile=up.ssl_ca_cert or None)
        if up.cert_file:
            context.load_cert_chain(up.cert_file, up.key_file)
        if not up.verify_ssl:
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        return context

    def _serve(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        session: aiohttp.ClientSession | None = None
        auth = {k: v for k, v in self.upstream.api_key.items() if k.lower() == "authorization"}
        tls = self._ssl()

        async def forward(request: web.Request) -> web.StreamResponse:
            assert session is not None
            agent = request.headers.get("User-Agent", "")
            self.log.append(
                Logged(time.monotonic(), classify(request.method, request.path, dict(request.query), agent))
            )
            headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
            headers.update(auth)
            body = await request.read()
            url = self.upstream.host.rstrip("/") + request.path_qs
            async with session.request(request.method, url, data=body, headers=headers, ssl=tls) as answer:
                response = web.StreamResponse(
                    status=answer.status,
                    headers={k: v for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP},
                )
                try:
                    await response.prepare(request)
                    async for chunk in answer.content.iter_any():
                        await response.write(chunk)
                    await response.write_eof()
                except (aiohttp.ClientError, ConnectionResetError):
                    pass  # a watch cut by either side (an operator stopping): nothing more to pass on
                return response

        async def start() -> web.AppRunner:
            nonlocal session
            session = aiohttp.ClientSession(  # no limit on connections (aiohttp's is 100): each watch holds one
                connector=aiohttp.TCPConnector(limit=0),
                auto_decompress=False,
                timeout=aiohttp.ClientTimeout(total=None),
            )
            app = web.Application(client_max_size=64 * 1024 * 1024)
            app.router.add_route("*", "/{tail:.*}", forward)
            runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)  # (watches: cut, not waited for)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.url = f"http://127.0.0.1:{port}"
            return runner

        runner = loop.run_until_complete(start())
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            if session is not None:
                loop.run_until_complete(session.close())
            pending = asyncio.all_tasks(loop)  # watches still being passed on: cut
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()
