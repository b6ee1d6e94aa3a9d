"""The worker's side of traces (docs/traces.md): a consumer span per attempt, the child of the span
that enqueued the job (the document's `traceparent`), with the messaging semantic conventions'
attributes; an exception, a timeout or a cancellation is recorded on it. Without OpenTelemetry
installed (the `otel` extra) nothing is imported and the handler is called as it is."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from fairway.queue.access.tracecontext import INSTALLED as INSTALLED
from fairway.queue.protocol.context import JobContext
from fairway.queue.protocol.job import TRACE_HEADER, Job

MESSAGING_SYSTEM = "fairway"


def traced(func: Callable[..., Any], job: Job, context: JobContext) -> Callable[..., Any]:
    """`func` run inside the attempt's span (an `async def` stays a coroutine function)."""
    from opentelemetry import propagate, trace

    parent = propagate.extract({TRACE_HEADER: job.traceparent}) if job.traceparent else None
    tracer = trace.get_tracer("fairway.worker")
    attributes: dict[str, str | int] = {
        "messaging.system": MESSAGING_SYSTEM,
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": job.queue,
        "messaging.message.id": job.id,
        "fairway.handler": job.handler,
        "fairway.attempt": context.attempt,
        "fairway.max_tries": context.max_tries,
    }
    if job.tenant is not None:
        attributes["fairway.tenant"] = job.tenant

    def span() -> Any:
        return tracer.start_as_current_span(
            f"process {job.queue}", context=parent, kind=trace.SpanKind.CONSUMER, attributes=attributes
        )

    def note_cancel(current: Any) -> None:
        if context.cancelled:
            current.set_attribute("fairway.cancelled", True)
            current.add_event("cancelled")

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            with span() as current:
                try:
                    return await func(*args, **kwargs)
                finally:
                    note_cancel(current)

        return run_async

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        with span() as current:
            try:
                return func(*args, **kwargs)
            finally:
                note_cancel(current)

    return run
