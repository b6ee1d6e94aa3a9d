"""Fairway: fair Redis job queues: the worker, the producer API and the `fairway` command."""

from fairway.client import Client
from fairway.handlers import job

__all__ = ["Client", "job"]
__version__ = "0.1.0"
