"""The emulator as its own process (like a real API server), for benchmarks and the scale tests: prints
its URL, serves until killed.

python -m support.kmock_server
"""

from __future__ import annotations

import asyncio
from typing import Any

import kmock

from support.kopf_kmock import Emulator, declare_resources


class ServingEmulator(Emulator):
    """kmock matches each request against its recorded history (every reaction checks whether the
    request is among those it has seen), so it slows down with traffic; a server process never reads
    that history, so it keeps only the requests still being matched: those in flight, but for watches
    already streaming (a thousand open watches made every request a thousand checks slower)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._serving: set[int] = set()

    async def _handle(self, request: kmock.Request) -> Any:
        self._serving.add(id(request))
        self._requests[:] = [
            r for r in self._requests if r is request or (id(r) in self._serving and not _streaming(r))
        ]
        try:
            return await super()._handle(request)
        finally:
            self._serving.discard(id(request))


def _streaming(request: kmock.Request) -> bool:
    return str(getattr(request.action, "value", request.action)).lower() == "watch"


async def serve() -> None:
    async with ServingEmulator() as emulator, kmock.Server(emulator):
        declare_resources(emulator)
        print(str(emulator.url).rstrip("/"), flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(serve())
