"""The tenant verbs as a user meets them: `tenant show` says paused, every `--json` speaks snake_case,
`pause --tenant` guards against a typo as queue names do, and `tenant reset` forgets the skip counts."""

from __future__ import annotations

import json
import subprocess
import sys

from fairway.queue.access.client import Client
from support.workers import run_in_process, worker_env


def fairway(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fairway.cli", *args, "--redis", url],
        capture_output=True,
        text=True,
        env=worker_env(url),
        timeout=60,
    )


def test_tenant_show_says_paused_and_json_keys_match_fairway_tenants(redis_url: str) -> None:
    Client(redis_url).enqueue("noop", tenant="t1")
    assert fairway(redis_url, "pause", "--tenant", "t1").returncode == 0
    shown = fairway(redis_url, "tenant", "show", "t1")
    assert "paused         yes" in shown.stdout, shown.stdout
    view = json.loads(fairway(redis_url, "tenant", "show", "t1", "--json").stdout)
    assert view["paused"] is True and "in_flight" in view and "max_in_flight" in view
    assert all(key == key.lower() for key in [*view, *view["sources"]]), view
    [row] = json.loads(fairway(redis_url, "tenants", "--json").stdout)
    assert "in_flight" in row and all(key == key.lower() for key in row), row
    assert fairway(redis_url, "continue", "--tenant", "t1").returncode == 0
    assert "paused         no" in fairway(redis_url, "tenant", "show", "t1").stdout


def test_pause_of_a_tenant_never_seen_is_refused_unless_forced(redis_url: str) -> None:
    Client(redis_url).enqueue("noop", tenant="acme")
    typo = fairway(redis_url, "pause", "--tenant", "acmee")
    assert typo.returncode == 1 and "tenant acmee of @tenant- has had no jobs" in typo.stderr
    assert "--force" in typo.stderr and "Traceback" not in typo.stderr
    assert fairway(redis_url, "pause", "--tenant", "acmee", "--force").returncode == 0
    assert fairway(redis_url, "pause", "--tenant", "acme").returncode == 0


def test_tenant_reset_forgets_the_turns_it_skipped(redis_url: str) -> None:
    client = Client(redis_url)
    client.set_tenant("t1", max_in_flight=1)
    client.enqueue_many("sleep", [[0.1]] * 4, tenant="t1")
    run_in_process(redis_url, tenants={"queue_prefix": "tenant-"}, concurrency=4, burst=True)
    before = json.loads(fairway(redis_url, "tenant", "show", "t1", "--json").stdout)
    assert before["capped"] > 0, before
    assert fairway(redis_url, "tenant", "reset", "t1").returncode == 0
    after = json.loads(fairway(redis_url, "tenant", "show", "t1", "--json").stdout)
    assert (after["capped"], after["throttled"], after["max_in_flight"]) == (0, 0, None), after


def test_every_tenant_verb_names_the_group_the_same_ways(redis_url: str) -> None:
    Client(redis_url).enqueue("noop", tenant="t1")
    for flag in ("--group", "--prefix"):
        for group in ("tenant-", "@tenant-"):
            for verb in (["tenants", "--json"], ["tenant", "show", "t1", "--json"], ["pause", "--tenant", "t1"]):
                out = fairway(redis_url, *verb, flag, group)
                assert out.returncode == 0, (verb, flag, group, out.stderr)
