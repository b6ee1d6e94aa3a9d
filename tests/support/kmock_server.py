"""The emulator as its own process (like a real API server), for benchmarks: prints its URL, serves until killed.

python -m support.kmock_server
"""

from __future__ import annotations

import asyncio

import kmock

from support.kopf_kmock import Emulator, declare_resources


async def serve() -> None:
    async with Emulator() as emulator, kmock.Server(emulator):
        declare_resources(emulator)
        print(str(emulator.url).rstrip("/"), flush=True)
        while True:
            # kmock matches every request against its whole recorded history, so it slows down
            # quadratically with traffic; a benchmark never reads the history, so keep only its tail.
            await asyncio.sleep(0.5)
            del emulator._requests[:-200]


if __name__ == "__main__":
    asyncio.run(serve())
