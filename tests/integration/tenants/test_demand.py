"""The scaling poll's read (queue/access/demand.py): the same figures from the standalone script and
the cluster pipeline, for queues and a tenant group, on real Redis and a real 3-node cluster."""

from __future__ import annotations

import time

import pytest

from fairway.queue.access.client import Client
from fairway.queue.access.demand import DemandReader
from fairway.queue.connection import connect
from fairway.queue.runtime.fetch import fetcher_for
from fairway.queue.runtime.settings import WorkerSettings


@pytest.mark.parametrize("where", ["standalone", "cluster"])
def test_demand_counts_ready_reserved_and_due_and_dates_the_oldest(
    where: str, redis_url: str, cluster_url: str
) -> None:
    url, cluster = (redis_url, False) if where == "standalone" else (cluster_url, True)
    client = Client(url, cluster=cluster)
    client.enqueue("noop", queue="mail")
    time.sleep(0.05)
    client.enqueue("noop", queue="mail")
    client.enqueue("noop", queue="mail", delay=0.01)  # due by the time it is read
    client.enqueue("noop", queue="mail", delay=3600)  # not due
    for n in range(3):
        client.enqueue("noop", tenant=f"t{n}")
    settings = WorkerSettings(queues=["mail"], tenants={})
    fetcher = fetcher_for(connect(url, cluster), settings)
    held = fetcher.reserve(count=2)  # two jobs reserved: busy slots
    time.sleep(0.05)
    rows = DemandReader(connect(url, cluster)).read(["mail", "@tenant-", "empty"])
    mail, group, empty = rows["mail"], rows["@tenant-"], rows["empty"]
    assert mail.ready + group.ready == 5 - len(held) and mail.reserved + group.reserved == len(held) == 2
    assert (mail.due, group.due) == (1, 0)
    assert mail.ready == 0 or (mail.oldest_age_s is not None and mail.oldest_age_s >= 0.04)
    assert (empty.ready, empty.reserved, empty.due, empty.oldest_age_s) == (0, 0, 0, None)
