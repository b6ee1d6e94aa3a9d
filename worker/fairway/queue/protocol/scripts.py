"""The Lua scripts: their sources (with the shared parts spliced in) and running them.

Every script gets, after an optional `#!lua` shebang, the generated key table (`QK`, `GK` from
fairway.queue.protocol.keys) and `lib.lua` (time, acks, failure-store trimming); a script that says
`-- #include tenant_lib.lua` gets the tenant-group functions too, and `producer_lib.lua` the checks
the producer scripts make (with the protocol's limits from fairway.queue.protocol.job as `LIMIT.x`). What
each script's KEYS and ARGV are is decided in one place, the builders in fairway.queue.protocol.calls.
"""

from __future__ import annotations

import functools
import re
import threading
import weakref
from importlib import resources
from typing import Any

import redis

from fairway.queue.connection import RedisClient
from fairway.queue.protocol.calls import ScriptCall
from fairway.queue.protocol.hotline import HotLine
from fairway.queue.protocol.job import (
    MAX_DELAY_S,
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENTS_PER_CALL,
    MAX_HANDLER_LENGTH,
    MAX_ID_LENGTH,
    MAX_UNIQUE_FOR_S,
    MAX_UNIQUE_KEY_BYTES,
)
from fairway.queue.protocol.keys import QUEUE_KEYS, TENANT_GROUP_KEYS, lua_prelude
from fairway.resource.names import MAX_TENANT_ID_LENGTH

# What other languages call: committed complete, in complete/ (cancel.lua: docs/cancel.md).
PRODUCER_SCRIPTS = ("enqueue", "enqueue_tenant", "cancel")
NAMES = (
    "enqueue",
    "register",
    "renew",
    "reserve",
    "reserve_one",
    "ack",
    "release",
    "fail",
    "maintain",
    "enqueue_tenant",
    "reserve_tenant",
    "ack_tenant",
    "release_tenant",
    "fail_tenant",
    "maintain_tenant",
    "continue_tenant",
    "tenant_figures",
    "tenant_settings",
    "demand",
    "job_status",
    "cancel",
    "tick",
    "batch",
    "chain",
)
_INCLUDE = "-- #include "


@functools.cache
def source(name: str) -> str:
    """A script's complete source, as Redis runs it: `QK.x` / `GK.x` are replaced by the key part
    they name in fairway.queue.protocol.keys (at load time, so the hot path builds no tables)."""
    folder = resources.files("fairway.queue.protocol").joinpath("scripts")
    lines = folder.joinpath(f"{name}.lua").read_text().splitlines()
    shebang = [lines.pop(0)] if lines and lines[0].startswith("#!lua") else []
    body = [
        folder.joinpath(line[len(_INCLUDE) :].strip()).read_text() if line.startswith(_INCLUDE) else line
        for line in lines
    ]
    text = "\n".join([*shebang, lua_prelude(), folder.joinpath("lib.lua").read_text(), *body])
    return _KEY_PART.sub(_key_part, text)


_KEY_PART = re.compile(r"\b(QK|GK|LIMIT)\.([a-z_]+)\b")
_PARTS: dict[str, dict[str, str | int]] = {
    "QK": {k.part.rstrip(":"): k.part for k in QUEUE_KEYS},
    "GK": {k.part.rstrip(":"): k.part for k in TENANT_GROUP_KEYS},
    # the protocol's limits, enforced by the producer scripts exactly as by the Python client
    "LIMIT": {
        "document_bytes": MAX_DOCUMENT_BYTES,
        "documents_per_call": MAX_DOCUMENTS_PER_CALL,
        "delay_ms": MAX_DELAY_S * 1000,
        "tenant_id_length": MAX_TENANT_ID_LENGTH,
        "id_length": MAX_ID_LENGTH,
        "handler_length": MAX_HANDLER_LENGTH,
        "unique_key_bytes": MAX_UNIQUE_KEY_BYTES,
        "unique_for_ms": MAX_UNIQUE_FOR_S * 1000,
    },
}


def _key_part(match: re.Match[str]) -> str:
    family, name = match.groups()
    try:
        return repr(_PARTS[family][name])
    except KeyError:
        raise ValueError(f"{family}.{name} is not in fairway.queue.protocol.keys' table") from None


def complete_source(name: str) -> str:
    """A producer script as one self-contained file, as committed in scripts/complete/ (a test keeps
    them equal) and printed by `fairway scripts`: what other languages load with SCRIPT LOAD or EVAL."""
    header = (
        f"-- {name}.lua, complete: generated from fairway/queue/protocol/scripts/ by its scripts.source;\n"
        "-- do not edit (a test keeps it equal). Call it with EVAL/EVALSHA as docs/protocol.md says.\n"
    )
    text = source(name)
    shebang, body = text.split("\n", 1) if text.startswith("#!lua") else ("", text)
    return (shebang + "\n" if shebang else "") + header + body + "\n"  # (Redis reads flags on line 1 only)


_REGISTERED: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
_REGISTERED_LOCK = threading.Lock()


def _registered(client: RedisClient) -> dict[str, Any]:
    """Each client's registered scripts, made once: the operator opens views on one client for every
    supervisor's pass, and registering hashes every script's source again."""
    with _REGISTERED_LOCK:
        found = _REGISTERED.get(client)
        if found is None:
            found = _REGISTERED[client] = {name: client.register_script(source(name)) for name in NAMES}
        return found


class Scripts:
    """The scripts registered with one client; `run` one call, or queue it on a pipeline."""

    def __init__(self, client: RedisClient) -> None:
        self.client = client
        self._registered = _registered(client)
        self._hot: HotLine | None = None

    def run(self, call: ScriptCall, pipeline: Any = None) -> Any:
        return self._registered[call.script](keys=call.keys, args=call.args, client=pipeline)

    @property
    def hot(self) -> HotLine:
        """The hot path's own connection (standalone Redis only)."""
        if self._hot is None:
            if not isinstance(self.client, redis.Redis):
                raise TypeError("the hot path is for a standalone Redis")
            self._hot = HotLine(self.client, self._registered)
        return self._hot
