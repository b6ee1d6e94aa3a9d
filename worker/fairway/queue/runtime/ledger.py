"""The settle ledger: how a finished job's outcome reaches Redis, owned until Redis confirms it.

A succeeded job's acknowledgement leaves the ledger only after the call that carried it returned
(it rides on the next reserve call, or on a flush of its own while draining or stopping). Several
calls may be on the wire at once (the pooled worker overlaps its reserve calls): each takes the acks
not yet sent (`take_acks`, an `AckBatch`), and its batch is confirmed (`acked`) or, when the call
failed, given back to go with the next one (`returned`), in whatever order the replies come; a retry's
release and a failure's record leave only after their own script returned. A call that fails (an
outage) keeps everything for the next flush, in order, so a job that succeeded is never left to
expire and run again while its worker lives, and no settle is dropped because another failed.
Sending twice is safe: every settling script returns 0 and changes nothing for a reservation that
is already gone.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from fairway.queue.protocol.calls import Ack, Reservation

T = TypeVar("T")


@dataclass(frozen=True)
class Settle:
    """A release (retry) or a failure record waiting to be written."""

    reservation: Reservation
    write: Callable[[], Any]  # the script call; raises on an outage


@dataclass(frozen=True)
class AckBatch:
    """The acknowledgements one call carries."""

    number: int
    acks: tuple[Ack, ...]


class SettleListener(Protocol):
    """Told of each reservation whose outcome Redis now has (the worker's `Leases`: no more renewing)."""

    def settled(self, reservation: Reservation) -> None: ...


class Ledger:
    def __init__(self, listener: SettleListener | None = None) -> None:
        self.listener = listener
        self._acks: list[Ack] = []  # not sent yet
        self._on_wire: dict[int, AckBatch] = {}
        self._batches = itertools.count(1)
        self._settles: deque[Settle] = deque()

    def __len__(self) -> int:
        return len(self._acks) + sum(len(b.acks) for b in self._on_wire.values()) + len(self._settles)

    @property
    def acks(self) -> tuple[Ack, ...]:
        """The acknowledgements not yet on the wire."""
        return tuple(self._acks)

    def ack(self, reservation: Reservation, wait_bucket: int) -> None:
        self._acks.append((reservation, wait_bucket))

    def take_acks(self) -> AckBatch:
        """Every ack not yet sent, for the call about to go out: settle the batch with `acked` or
        `returned` once the call returned or failed."""
        batch = AckBatch(next(self._batches), tuple(self._acks))
        self._acks.clear()
        self._on_wire[batch.number] = batch
        return batch

    def acked(self, batch: AckBatch) -> None:
        """The call carrying `batch` returned: its acks are in Redis."""
        del self._on_wire[batch.number]
        if self.listener is not None:
            for reservation, _ in batch.acks:
                self.listener.settled(reservation)

    def returned(self, batch: AckBatch) -> None:
        """The call carrying `batch` failed: its acks go with the next call, ahead of newer ones."""
        if self._on_wire.pop(batch.number, None) is not None:
            self._acks[:0] = batch.acks

    def later(self, reservation: Reservation, write: Callable[[], Any]) -> None:
        self._settles.append(Settle(reservation, write))

    def write_settles(self) -> None:
        """Write every waiting release and failure, oldest first; on an outage the one that failed
        and those after it stay (the error propagates, for the caller's backoff)."""
        while self._settles:
            self._settles[0].write()
            settled = self._settles.popleft().reservation
            if self.listener is not None:
                self.listener.settled(settled)

    def flush(self, send_acks: Callable[[Sequence[Ack]], Any]) -> None:
        """Everything, now: the settles, then the acks in one call of `send_acks`."""
        self.write_settles()
        if self._acks:
            self.carry(send_acks)

    def carry(self, call: Callable[[tuple[Ack, ...]], T]) -> T:
        """Make a call that carries every ack not yet sent: confirmed when it returns, given back
        (ahead of newer ones) when it raises."""
        batch = self.take_acks()
        try:
            result = call(batch.acks)
        except BaseException:
            self.returned(batch)
            raise
        self.acked(batch)
        return result
