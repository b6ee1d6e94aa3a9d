"""Fairway: fair Redis job queues: the worker, the producer API and the `fairway` command."""

from fairway.queue.access.batches import Batch, Call
from fairway.queue.access.chains import Chain, ChainStatus
from fairway.queue.access.client import Client, Enqueued
from fairway.queue.access.figures import BatchStatus
from fairway.queue.access.results import JobFailedError, ResultUnavailable
from fairway.queue.protocol.context import JobCancelled, JobContext, current_job
from fairway.queue.runtime.handlers import job, schedule

__all__ = [
    "Batch",
    "BatchStatus",
    "Call",
    "Chain",
    "ChainStatus",
    "Client",
    "Enqueued",
    "JobCancelled",
    "JobContext",
    "JobFailedError",
    "ResultUnavailable",
    "current_job",
    "job",
    "schedule",
]
__version__ = "0.1.0"
