"""A TCP proxy that delays every reply by a fixed time: Redis "one network hop away", on loopback.

    python bench/proxy.py --listen 7001 --upstream 127.0.0.1:6379 --delay-ms 1

`tc netem` is not available on these machines. Each chunk Redis sends back is held for `delay` and then
forwarded in order, so every round trip costs `delay` more while pipelined or concurrent requests
still overlap, as they would on a real network (latency, not a bandwidth cap). Requests go through at
once: one delayed direction keeps the timer resolution (1 ms for asyncio's selector) from doubling it.
It stops by itself after --max-seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import time


async def _forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float) -> None:
    loop = asyncio.get_running_loop()
    pending: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, data = await pending.get()
            if not data:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()

    sender = asyncio.create_task(deliver())
    try:
        while data := await reader.read(65536):
            pending.put_nowait((loop.time() + delay_s, data))
    except (ConnectionError, OSError):
        pass
    finally:
        pending.put_nowait((0.0, b""))
        await asyncio.gather(sender, return_exceptions=True)
        writer.close()


async def serve(listen: int, upstream: tuple[str, int], delay_s: float, max_seconds: float) -> None:
    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(*upstream)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            _forward(client_reader, server_writer, 0.0),
            _forward(server_reader, client_writer, delay_s),
            return_exceptions=True,
        )

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await asyncio.sleep(max_seconds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="host:port")
    parser.add_argument("--delay-ms", type=float, default=1.0)
    parser.add_argument("--max-seconds", type=float, default=3600)
    args = parser.parse_args()
    host, port = args.upstream.rsplit(":", 1)
    started = time.monotonic()
    asyncio.run(serve(args.listen, (host, int(port)), args.delay_ms / 1000, args.max_seconds))
    print(f"proxy stopped after {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
