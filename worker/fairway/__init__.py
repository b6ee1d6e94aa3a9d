"""Fairway: fair Redis job queues: the worker, the producer API and the `fairway` command."""

__version__ = "0.1.0"
