"""The producer's side of traces (docs/traces.md): the current OpenTelemetry context as a W3C
traceparent, written into each job's document so that its worker's spans are children of the span
that enqueued it. Without OpenTelemetry installed (the `otel` extra) nothing is imported."""

from __future__ import annotations

from importlib.util import find_spec

from fairway.queue.protocol.job import TRACE_HEADER


def _installed() -> bool:
    try:
        return find_spec("opentelemetry") is not None
    except (ImportError, ValueError):  # (an import hook that refuses it: not installed, as far as we go)
        return False


INSTALLED = _installed()


def current_traceparent() -> str | None:
    """The current span's traceparent, or None (no span, or OpenTelemetry not installed)."""
    if not INSTALLED:
        return None
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier.get(TRACE_HEADER)
