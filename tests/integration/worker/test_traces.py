"""Traces (docs/traces.md): the producer writes the current span's W3C traceparent into the document, and
the worker's span for each attempt is its child, with the messaging conventions' attributes; failures
and retries are on the spans; a malformed trace context never fails a job; without OpenTelemetry the
worker imports none of it. The OpenTelemetry SDK's in-memory exporter, a real Redis, real workers."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from fairway.queue.access.client import Client
from fairway.queue.connection import connect
from fairway.queue.protocol.job import decode
from fairway.queue.protocol.keys import QueueKeys
from support.workers import run_in_process, worker_env

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The process's tracer provider (set once: OpenTelemetry allows one) exporting to memory."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


def consumer_spans(exporter: InMemorySpanExporter) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if s.kind is trace.SpanKind.CONSUMER]


def test_the_handlers_span_is_a_child_of_the_span_that_enqueued_it(redis_url: str, spans: InMemorySpanExporter) -> None:
    client = Client(redis_url)
    with trace.get_tracer("the-app").start_as_current_span("POST /orders") as request:
        job = client.enqueue("noop", queue="traced", tenant=None)
        tenant_job = client.enqueue("noop", tenant="acme")
    (doc,) = connect(redis_url).lrange(QueueKeys("fairway", "traced").ready, 0, -1)
    ids = request.get_span_context()
    assert decode(doc).traceparent == f"00-{ids.trace_id:032x}-{ids.span_id:016x}-{ids.trace_flags:02x}"
    run_in_process(redis_url, queues=["traced"], tenants={"queue_prefix": "tenant-"}, burst=True)
    found = {s.attributes["messaging.message.id"]: s for s in consumer_spans(spans)}
    span, tenant_span = found[job], found[tenant_job]
    assert span.name == "process traced" and span.parent is not None
    assert (span.context.trace_id, span.parent.span_id) == (ids.trace_id, ids.span_id), "the request's child"
    assert dict(span.attributes) == {
        "messaging.system": "fairway",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": "traced",
        "messaging.message.id": str(job),
        "fairway.handler": "noop",
        "fairway.attempt": 1,
        "fairway.max_tries": 1,
    }
    assert tenant_span.attributes["fairway.tenant"] == "acme" and tenant_span.name == "process tenant-acme"
    assert span.status.status_code is trace.StatusCode.UNSET


def test_each_attempt_has_a_span_with_its_failure(redis_url: str, spans: InMemorySpanExporter) -> None:
    client = Client(redis_url)
    with trace.get_tracer("the-app").start_as_current_span("import") as parent:
        client.enqueue("fail", "card declined", queue="retries", max_tries=2)
    run_in_process(redis_url, queues=["retries"], burst=True)
    attempts = sorted(consumer_spans(spans), key=lambda s: s.attributes["fairway.attempt"])
    assert [s.attributes["fairway.attempt"] for s in attempts] == [1, 2]
    for span in attempts:
        assert span.parent.span_id == parent.get_span_context().span_id
        assert span.status.status_code is trace.StatusCode.ERROR
        (event,) = [e for e in span.events if e.name == "exception"]
        assert event.attributes["exception.message"] == "card declined"


def test_async_handlers_in_the_pool_are_traced_too(redis_url: str, spans: InMemorySpanExporter) -> None:
    import support.jobs  # noqa: F401  (registers async handlers)

    client = Client(redis_url)
    with trace.get_tracer("the-app").start_as_current_span("batch") as parent:
        ids = [client.enqueue("acompute", i, 1, queue="pooled") for i in range(4)]
    run_in_process(redis_url, queues=["pooled"], concurrency=4, burst=True)
    traced = {s.attributes["messaging.message.id"]: s for s in consumer_spans(spans)}
    assert set(ids) <= set(traced)
    assert {traced[i].parent.span_id for i in ids} == {parent.get_span_context().span_id}


def test_a_malformed_trace_context_never_fails_a_job(redis_url: str, spans: InMemorySpanExporter) -> None:
    bad = b'{"id":"raw-1","v":1,"handler":"noop","queue":"raw","args":[],"kwargs":{},"traceparent":"00-zz-1-01"}'
    r = connect(redis_url)
    r.rpush(QueueKeys("fairway", "raw").ready, bad)
    r.rpush(QueueKeys("fairway", "raw").notify, "1")
    lines = run_in_process(redis_url, queues=["raw"], burst=True)
    assert [(line["id"], line["outcome"]) for line in lines] == [("raw-1", "ok")]
    (span,) = consumer_spans(spans)
    assert span.parent is None, "a root span: the context it named could not be read"


def test_a_bad_traceparent_is_refused_by_the_producer(redis_url: str) -> None:
    from fairway.queue.protocol.job import JobError

    with pytest.raises(JobError, match="not a W3C traceparent") as caught:
        Client(redis_url).enqueue("noop", traceparent="00-abc-def-01")
    assert caught.value.code == "BAD_TRACE" and not connect(redis_url).keys("*default*ready")


BLOCKED = """
import importlib.abc, sys
class NoOtel(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, NoOtel())
from fairway.cli import main
code = main(sys.argv[1:])
assert not [m for m in sys.modules if m.startswith("opentelemetry")], "OpenTelemetry was imported"
sys.exit(code)
"""


def test_without_opentelemetry_the_worker_imports_none_of_it(redis_url: str) -> None:
    job = Client(redis_url).enqueue("noop", queue="plain")
    out = subprocess.run(
        [sys.executable, "-c", BLOCKED, "worker", "--redis", redis_url, "--queues", "plain", "--burst",
         "--log-format", "json", "--metrics-port", "0", "--health-port", "0"],
        capture_output=True, text=True, timeout=60, env=worker_env(redis_url),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert f'"id": "{job}"' in out.stdout or f'"id":"{job}"' in out.stdout, out.stdout[-2000:]


EXPORTING = """
import atexit, sys
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
provider = TracerProvider(resource=Resource.create({"service.name": "fairway-worker"}))
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=sys.argv.pop(1))))
trace.set_tracer_provider(provider)
from fairway.cli import main
code = main(sys.argv[1:])
provider.shutdown()  # flushes the last spans to the collector
sys.exit(code)
"""


def test_spans_reach_an_otlp_collector_over_http_on_loopback(redis_url: str, spans: InMemorySpanExporter) -> None:
    """The worker as a user runs it with OpenTelemetry's OTLP/HTTP exporter: its spans arrive at a
    collector's endpoint (here a loopback HTTP server decoding the protobuf), children of the producer's."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    received: list[Any] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            received.extend(s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with trace.get_tracer("the-app").start_as_current_span("checkout") as parent:
            job = Client(redis_url).enqueue("noop", queue="exported")
        endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
        out = subprocess.run(
            [sys.executable, "-c", EXPORTING, endpoint, "worker", "--redis", redis_url, "--queues", "exported",
             "--burst", "--metrics-port", "0", "--health-port", "0"],
            capture_output=True, text=True, timeout=60, env=worker_env(redis_url),
        )  # fmt: skip
        assert out.returncode == 0, out.stderr[-2000:]
    finally:
        server.shutdown()
    (span,) = [s for s in received if s.name == "process exported"]
    ids = parent.get_span_context()
    assert span.trace_id.hex() == f"{ids.trace_id:032x}" and span.parent_span_id.hex() == f"{ids.span_id:016x}"
    attributes = {a.key: a.value.string_value or a.value.int_value for a in span.attributes}
    assert attributes["messaging.message.id"] == str(job) and attributes["messaging.system"] == "fairway"


def test_a_cancelled_attempt_says_so_on_its_span(
    redis_url: str, spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import support.jobs  # (until_cancelled, which notes in the test's Redis that it started)

    monkeypatch.setenv("FAIRWAY_TEST_REDIS", redis_url)
    monkeypatch.setattr(support.jobs, "_client", None)

    client = Client(redis_url)
    job = client.enqueue("until_cancelled", "seen-traced", queue="stop", result_ttl=60)
    notes = connect(redis_url)

    def cancel_once_started() -> None:
        for _ in range(200):
            if notes.lrange("seen-traced", 0, -1):
                client.cancel(job, queue="stop")
                return
            threading.Event().wait(0.05)

    canceller = threading.Thread(target=cancel_once_started)
    canceller.start()
    lines = run_in_process(redis_url, queues=["stop"], burst=True, retry_after_s=0.6)
    canceller.join()
    assert [line["outcome"] for line in lines] == ["cancelled"]
    (span,) = consumer_spans(spans)
    assert span.attributes["fairway.cancelled"] is True and [e.name for e in span.events][-1] in (
        "cancelled",
        "exception",
    )
    assert "cancelled" in [e.name for e in span.events]
