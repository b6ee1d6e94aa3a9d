"""Fairway: fair Redis job queues: the worker, the producer API and the `fairway` command."""

from fairway.queue.access.client import Client
from fairway.queue.protocol.context import JobContext, current_job
from fairway.queue.runtime.handlers import job

__all__ = ["Client", "JobContext", "current_job", "job"]
__version__ = "0.1.0"
