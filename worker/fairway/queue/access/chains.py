"""Chains (docs/batches.md, "Chains"): steps that run one after another, each a job or a group of jobs.

A chain is a row of batches (`<chain id>.1`, `.2`, ...) written by one `chain.lua` call: the first
step's jobs are ready at once; each later step's documents wait in the hash of the step before and are
made due by the settle that ends that step's last job, when all of its jobs succeeded (a step that did
not all succeed stops the chain there, and the status says which). A group followed by a step is a
chord. Every step's jobs keep their results for the chain's ttl, so a step reads the one before's with
`client.job(id, queue=...).result()`: the ids are known before the chain starts.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fairway.queue.access.batches import Batches, Destination
from fairway.queue.access.figures import BatchStatus
from fairway.queue.access.producer import Producer, refusals_as_job_errors
from fairway.queue.protocol import calls
from fairway.queue.protocol.job import MAX_DOCUMENTS_PER_CALL, JobError, check_job_id


@dataclass(frozen=True)
class ChainStatus:
    id: str
    steps: list[BatchStatus]  # step 1 first; a step the chain never reached is still listed, all pending

    @property
    def failed_step(self) -> int | None:
        """The step (from 1) whose jobs did not all succeed, which stopped the chain; None if none did."""
        return next((n for n, s in enumerate(self.steps, 1) if s.done and s.failed + s.cancelled), None)

    @property
    def done(self) -> bool:
        """Every step succeeded, or a step stopped it."""
        return self.failed_step is not None or all(s.done for s in self.steps)


class Chain:
    """`then(handler, *args)` adds a step of one job, `then_group(handler, calls)` a step of many; `start()`
    writes them all at once. Each returns its job ids, known before the chain starts."""

    def __init__(self, to: Destination) -> None:
        self.id = uuid.uuid4().hex
        self.to = to
        self.producer, self.queue, self.tenant, self.keys = to.producer, to.queue, to.tenant, to.keys
        self.steps: list[list[bytes]] = []
        self.started = False

    def then(self, handler: str, *args: Any, kwargs: Mapping[str, Any] | None = None) -> str:
        """A step of one job, run once the step before succeeded; its job id."""
        (job_id,) = self.then_group(handler, [args], kwargs=kwargs)
        return job_id

    def then_group(
        self, handler: str, calls_: Iterable[Sequence[Any]], *, kwargs: Mapping[str, Any] | None = None
    ) -> list[str]:
        """A step of many jobs (one per argument tuple), run together; the next step waits for all."""
        if self.started:
            raise JobError(f"chain {self.id} has started: add its steps before start()", code="BAD_BATCH")
        jobs = self.to.jobs(handler, calls_, kwargs, result_ttl=self.to.ttl_s)
        if not jobs:
            raise JobError("a chain step needs at least one job", code="BAD_BATCH")
        if sum(map(len, self.steps)) + len(jobs) + len(self.steps) + 1 > MAX_DOCUMENTS_PER_CALL - 8:
            raise JobError(
                f"a chain holds at most about {MAX_DOCUMENTS_PER_CALL:,} jobs in all: run a large step as a batch",
                code="BAD_BATCH",
            )
        self.steps.append([job.encode(self.to.max_payload_bytes) for job in jobs])
        return [job.id for job in jobs]

    def start(self) -> str:
        """Write the chain (one atomic step): its first step is ready at once. The chain id."""
        if self.started:
            raise JobError(f"chain {self.id} has started already", code="BAD_BATCH")
        if not self.steps:
            raise JobError("a chain needs at least one step: add steps with then(), then start()", code="BAD_BATCH")
        standalone = None if self.producer.cluster else self.producer.globals
        ttl_ms = int(self.to.ttl_s * 1000)
        call = calls.chain(self.keys, standalone, self.id, self.tenant, self.queue, ttl_ms, self.steps)
        with refusals_as_job_errors():
            self.producer.scripts.run(call)
        self.started = True
        Batches(self.producer).remember(self.to.served_name, self.tenant, f"{self.id}.1")
        return self.id


def chain_status(producer: Producer, chain_id: str) -> ChainStatus | None:
    """A chain's steps, found through its first step's listing; None once it expired (or never was)."""
    check_job_id(chain_id)
    batches = Batches(producer)
    first = batches.find(f"{chain_id}.1")
    if first is None:
        return None
    steps = [first]
    while True:
        step = batches.read(f"{chain_id}.{len(steps) + 1}", first.served_name, first.tenant)
        if step is None:
            return ChainStatus(chain_id, steps)
        steps.append(step)
