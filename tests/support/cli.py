"""`fairway` as a user runs it, for tests: its own process, this environment's Python, never a traceback
hidden by an in-process call. The one helper every CLI test uses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.workers import worker_env


def fairway(
    *args: str,
    redis: str | None = None,
    test_redis: str | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    cwd: Path | str | None = None,
    timeout: float = 60,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run `fairway ARGS`. `redis`: appended as `--redis URL`, and the Redis the test handlers
    (support.jobs) report to; `test_redis`: only the latter, when ARGS name their Redis themselves;
    `env`: added to this process's environment."""
    command = [sys.executable, "-m", "fairway.cli", *args, *(["--redis", redis] if redis else [])]
    handlers_redis = test_redis or redis
    environment = worker_env(handlers_redis) if handlers_redis else dict(os.environ)
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        input=stdin,
        cwd=cwd,
        env={**environment, **(env or {})},
        timeout=timeout,
        check=check,
    )
