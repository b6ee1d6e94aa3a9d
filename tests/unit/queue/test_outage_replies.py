"""Which Redis replies are an outage (back off, keep the jobs) and which are a bug (raise): every reply a
failover can give, to a write, a blocked read or a cluster client, is an outage."""

from __future__ import annotations

import pytest
import redis

from fairway.queue.connection import OUTAGE_ERRORS, is_outage

FAILOVER_REPLIES = [
    "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
    "READONLY You can't write against a read only replica.",
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
    "NOREPLICAS Not enough good replicas to write.",
    "LOADING Redis is loading the dataset in memory",
    "CLUSTERDOWN The cluster is down",
    "TRYAGAIN Multiple keys request during rehashing of slot",
    "OOM command not allowed when used memory > 'maxmemory'.",
]


@pytest.mark.parametrize("reply", FAILOVER_REPLIES)
def test_a_failover_reply_is_an_outage(reply: str) -> None:
    error = redis.ResponseError(reply)
    assert isinstance(error, OUTAGE_ERRORS) and is_outage(error)


@pytest.mark.parametrize("reply", ["ERR unknown command 'BLMPOP'", "WRONGTYPE Operation against a key", "NOSCRIPT x"])
def test_an_error_that_is_a_bug_is_not(reply: str) -> None:
    assert not is_outage(redis.ResponseError(reply))
