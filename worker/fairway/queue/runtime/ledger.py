"""The settle ledger: how a finished job's outcome reaches Redis, owned until Redis confirms it.

A succeeded job's acknowledgement leaves the ledger only after the call that carried it returned
(it rides on the next reserve call, or on a flush of its own while draining or stopping); a retry's
release and a failure's record leave only after their own script returned. A call that fails (an
outage) keeps everything for the next flush, in order, so a job that succeeded is never left to
expire and run again while its worker lives, and no settle is dropped because another failed.
Sending twice is safe: every settling script returns 0 and changes nothing for a reservation that
is already gone.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fairway.queue.protocol.calls import Ack, Reservation


@dataclass(frozen=True)
class Settle:
    """A release (retry) or a failure record waiting to be written."""

    reservation: Reservation
    write: Callable[[], Any]  # the script call; raises on an outage


class Ledger:
    def __init__(self, on_settled: Callable[[Reservation], None] = lambda _: None) -> None:
        self.on_settled = on_settled  # told of each reservation whose outcome Redis now has
        self._acks: list[Ack] = []
        self._settles: deque[Settle] = deque()

    def __len__(self) -> int:
        return len(self._acks) + len(self._settles)

    @property
    def acks(self) -> tuple[Ack, ...]:
        """The acknowledgements to send with the next call (a snapshot: confirm with `acked`)."""
        return tuple(self._acks)

    def ack(self, reservation: Reservation, wait_bucket: int) -> None:
        self._acks.append((reservation, wait_bucket))

    def acked(self, sent: Sequence[Ack]) -> None:
        """The call carrying `sent` (the first len(sent) acks) returned: they are in Redis."""
        del self._acks[: len(sent)]
        for reservation, _ in sent:
            self.on_settled(reservation)

    def later(self, reservation: Reservation, write: Callable[[], Any]) -> None:
        self._settles.append(Settle(reservation, write))

    def write_settles(self) -> None:
        """Write every waiting release and failure, oldest first; on an outage the one that failed
        and those after it stay (the error propagates, for the caller's backoff)."""
        while self._settles:
            self._settles[0].write()
            self.on_settled(self._settles.popleft().reservation)

    def flush(self, send_acks: Callable[[Sequence[Ack]], Any]) -> None:
        """Everything, now: the settles, then the acks in one call of `send_acks`."""
        self.write_settles()
        acks = self.acks
        if acks:
            send_acks(acks)
            self.acked(acks)
