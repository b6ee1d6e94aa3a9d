"""What every served name has waiting and running, for the planner: one call per Redis for any number
of supervisors, cheap enough to take every second (the operator's scaling poll).

Per queue: its ready jobs and when the oldest became ready, its reserved jobs (busy slots) and its
delayed jobs already due; per tenant group the same, its ready jobs counted by its notify list (one
token per ready job, so no tenant's list is read). A standalone Redis answers all of it in one
read-only script call (demand.lua): 500 supervisors of three queues cost the operator one command a
second, not 6,000. A cluster cannot run one script across slots: it gets the same reads pipelined.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fairway.queue.access.figures import QueueStats
from fairway.queue.access.inspector import Inspector, age_s, ready_since
from fairway.queue.connection import RedisClient, is_cluster
from fairway.queue.protocol import calls
from fairway.queue.protocol.job import now_ms
from fairway.queue.protocol.keys import DEFAULT_PREFIX, QueueKeys, family_keys
from fairway.queue.protocol.scripts import Scripts


class DemandReader:
    """Reads demand from one Redis; keeps its registered scripts between polls."""

    def __init__(self, client: RedisClient, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self.prefix = prefix
        self._scripts: Scripts | None = None

    def read(self, names: Iterable[str]) -> dict[str, QueueStats]:
        """Served name -> its figures (ready, reserved, due, oldest age; the rest left at zero)."""
        wanted = sorted(set(names))
        if not wanted:
            return {}
        if is_cluster(self.client):
            return self._pipelined(wanted)
        if self._scripts is None:
            self._scripts = Scripts(self.client)
        flat = self._scripts.run(calls.demand(self.prefix, wanted))
        now = now_ms()
        out = {}
        for i, name in enumerate(wanted):
            ready, reserved, due, since = (int(v) for v in flat[4 * i : 4 * i + 4])
            oldest = max(0.0, (now - since) / 1000) if since > 0 else None
            out[name] = QueueStats(name, ready, reserved, 0, 0, False, oldest, due)
        return out

    def runtimes(self, names: Sequence[str]) -> dict[str, float | None]:
        """Served name -> its recent average runtime in ms (None where nothing ran): the `time`
        strategy's weights and targetWait's sizing, read every RUNTIMES_EVERY_S, not every poll."""
        return Inspector(self.client, self.prefix).average_runtimes_ms(names)

    def _pipelined(self, wanted: list[str]) -> dict[str, QueueStats]:
        asked = now_ms()
        with self.client.pipeline(transaction=False) as pipe:
            for name in wanted:
                k = family_keys(self.prefix, name)
                if isinstance(k, QueueKeys):
                    pipe.llen(k.ready)
                    pipe.lindex(k.ready, 0)
                else:
                    pipe.llen(k.notify)
                    pipe.exists(k.notify)  # (a placeholder reply: a group has no single head to date)
                pipe.zcard(k.reserved)
                pipe.zcount(k.delayed, "-inf", asked)
            replies = iter(pipe.execute())
        read = [(name, *(next(replies) for _ in range(4))) for name in wanted]
        heads = [
            (k.attempts, "", head)
            if isinstance(k := family_keys(self.prefix, name), QueueKeys)
            else (k.attempts, "", None)
            for name, _, head, _, _ in read
        ]
        since = ready_since(self.client, heads)
        now = now_ms()
        return {
            name: QueueStats(name, int(ready), int(reserved), 0, 0, False, age_s(at, now), int(due))
            for (name, ready, _, reserved, due), at in zip(read, since, strict=True)
        }
