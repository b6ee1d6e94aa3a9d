"""A private redis-server on a free loopback port, for `fairway demo` and `fairway up` without a Redis."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import redis


class EmbeddedRedisError(RuntimeError):
    pass


class EmbeddedRedis:
    """Starts on enter, stops (and removes its directory) on exit. Keeps nothing on disk."""

    def __init__(self, binary: str | None = None) -> None:
        found = binary or shutil.which("redis-server")
        if not found:
            raise EmbeddedRedisError(
                "redis-server was not found: install Redis 7 (Debian: apt-get install redis-server; "
                "macOS: brew install redis) or pass a redis URL"
            )
        self.binary = found
        self.port = 0
        self._dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def __enter__(self) -> EmbeddedRedis:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self._dir = Path(tempfile.mkdtemp(prefix="fairway-embedded-"))
        self._proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self._dir),
                "--logfile",
                str(self._dir / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(port=self.port, socket_timeout=1).ping()
                return self
            except redis.ConnectionError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    self.__exit__(None, None, None)
                    raise EmbeddedRedisError(f"redis-server did not start on port {self.port}") from None
                time.sleep(0.05)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
