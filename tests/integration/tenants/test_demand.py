"""The scaling poll's read (queue/access/demand.py): the same figures from the standalone script and
the cluster pipeline, for queues and a tenant group, on real Redis and a real 3-node cluster."""

from __future__ import annotations

import time

import pytest

from fairway.queue.access.client import Client
from fairway.queue.access.demand import DemandReader
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from fairway.queue.runtime.fetch import fetcher_for
from fairway.resource.worker_settings import WorkerSettings


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


@pytest.mark.parametrize("where", ["standalone", "cluster"])
def test_a_job_handed_back_is_as_old_as_its_wait_not_its_enqueue(where: str, redis_url: str, cluster_url: str) -> None:
    """The planner's targetWait reads the oldest ready job's age: a retried job counts from when it was
    handed back (its backoff over), not from its first enqueue, or a retry would look like a backlog."""
    url, cluster = (redis_url, False) if where == "standalone" else (cluster_url, True)
    Client(url, cluster=cluster).enqueue("noop", queue="mail")
    time.sleep(1.5)
    fetcher = fetcher_for(connect(url, cluster), WorkerSettings(queues=["mail"]))
    [held] = fetcher.reserve(count=1)
    assert fetcher.release(held, 0)
    [row] = DemandReader(connect(url, cluster)).read(["mail"]).values()
    assert row.ready == 1 and row.oldest_age_s is not None and row.oldest_age_s < 0.5, row
    [stats] = Inspector(connect(url, cluster)).stats(["mail"])
    assert stats.oldest_age_s is not None and stats.oldest_age_s < 0.5, stats
