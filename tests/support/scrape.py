"""A process's Prometheus /metrics over HTTP, parsed with prometheus_client's own parser: for the
worker's metrics tests and the benchmarks that read what a worker measured."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int) -> Samples:
    """Every sample, by name and labels."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample with exactly these labels (0 when absent, as a counter not yet counted)."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)
