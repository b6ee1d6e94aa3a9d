"""The hot path's own connection to a standalone Redis: EVALSHA without the client's per-command
layers, several calls on the wire at once, and a reply from a nearby Redis waited for awake.

Calls can be sent without waiting (`send`) and their replies taken as they arrive (`receive`): the
pooled worker overlaps its round trips this way, and a `select` on `fileno` tells when a reply is
there. A Redis that restarted and forgot a script gets it loaded again and the call sent again. Any
error closes the connection (a half-read reply must never be read as the next call's) and forgets
every call on the wire; it propagates, for the worker's outage handling.
"""

from __future__ import annotations

import itertools
import select
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import hiredis
import redis

from fairway.queue.protocol.calls import ScriptCall

SPIN_WINDOW_S = 0.0002  # a reply that usually comes sooner than this is waited for awake (see ReplyWait)
_TYPICAL_WEIGHT = 0.1  # each reply's share of the typical reply time (an exponential average)


class ReplyWait:
    """How to wait for a reply: awake (polling the socket) when replies usually come within
    SPIN_WINDOW_S, asleep (blocked in recv) otherwise.

    Blocking costs a wake-up per call, ~65 us on the 2-vCPU VMs the benchmarks run on (the thread
    sleeps, its CPU idles, the scheduler and cold caches bring it back): with Redis on the same host
    that is more than the round trip itself, and the one-slot worker pays it on every job. Polling for
    at most SPIN_WINDOW_S from the send spends that CPU instead, and only where Redis answers that
    fast: a Redis a network hop away (typical reply >= SPIN_WINDOW_S) is never polled for, so it
    costs no CPU there.
    """

    def __init__(self) -> None:
        self.typical_s = 0.0  # starts near: the first replies tell

    def poll_until(self, sent_at: float) -> float:
        """The perf_counter time to poll until (in the past: do not poll)."""
        return sent_at + SPIN_WINDOW_S if self.typical_s < SPIN_WINDOW_S else 0.0

    def replied(self, took_s: float) -> None:
        self.typical_s += (took_s - self.typical_s) * _TYPICAL_WEIGHT


class HotLine:
    """EVALSHA on a connection of its own, skipping the client's per-command layers (pool checkout,
    retries, instrumentation), which cost ~30 us a job here (bench/throughput.py)."""

    def __init__(self, client: redis.Redis, registered: dict[str, Any]) -> None:
        self.client = client
        self._registered = registered
        self._conn: Any = client.connection_pool.get_connection()
        self._calls = itertools.count(1)
        self._on_wire: deque[tuple[int, ScriptCall, float]] = deque()
        self.wait = ReplyWait()

    @property
    def on_wire(self) -> int:
        return len(self._on_wire)

    def fileno(self) -> int:
        """The socket to select on for replies (connected by the first send)."""
        sock = self._conn._sock  # redis-py keeps no public handle on it
        return -1 if sock is None else int(sock.fileno())

    def send(self, call: ScriptCall) -> int:
        """Put a call on the wire; returns its number, which `receive` gives back with its reply."""
        number = next(self._calls)
        self._send(number, call)
        return number

    def _send(self, number: int, call: ScriptCall) -> None:
        script = self._registered[call.script]
        try:
            # hiredis packs the str, bytes, int and float arguments as they are; redis-py's own packer
            # first copies and checks each of them, ~8 us a call here (a dependency: redis[hiredis])
            packed = hiredis.pack_command(("EVALSHA", script.sha, len(call.keys), *call.keys, *call.args))
            self._conn.send_packed_command([packed], check_health=False)
        except BaseException:
            self._broken()
            raise
        self._on_wire.append((number, call, time.perf_counter()))

    def ready(self) -> bool:
        """A reply is there to be read without waiting."""
        try:
            return bool(self._on_wire) and bool(self._conn.can_read(timeout=0))
        except BaseException:
            self._broken()
            raise

    def receive(self) -> tuple[int, Any] | None:
        """The oldest call's reply (waiting for it), or None when that call had to be sent again
        because Redis had forgotten its script."""
        number, call, sent_at = self._on_wire.popleft()
        try:
            self._poll(sent_at)
            reply = self._conn.read_response()
        except redis.exceptions.NoScriptError:
            script = self._registered[call.script]
            self.client.script_load(script.script)
            self._send(number, call)
            return None
        except BaseException:
            self._broken()
            raise
        self.wait.replied(time.perf_counter() - sent_at)
        return number, reply

    def _poll(self, sent_at: float) -> None:
        """Wait awake for the reply until ReplyWait's deadline (then the read blocks as usual)."""
        until = self.wait.poll_until(sent_at)
        sock = self._conn._sock
        if sock is None or self._on_wire or time.perf_counter() >= until:
            return  # (with more calls on the wire a reply may sit in the parser's buffer: not polled)
        fds = [sock.fileno()]
        while not select.select(fds, [], [], 0)[0] and time.perf_counter() < until:
            pass

    def run(self, call: ScriptCall, while_waiting: Callable[[], object] | None = None) -> Any:
        """Send one call and wait for its reply, calling `while_waiting` once while it is on the wire;
        nothing else may be on the wire."""
        if self._on_wire:
            raise RuntimeError("a call is on the hot line already: take its reply first")
        self.send(call)
        if while_waiting is not None:
            while_waiting()
        while (reply := self.receive()) is None:
            pass
        return reply[1]

    def _broken(self) -> None:
        self._on_wire.clear()
        self._conn.disconnect()
