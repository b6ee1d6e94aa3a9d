"""The tenant verbs as a user meets them: `tenant show` says paused, every `--json` speaks snake_case,
`pause --tenant` guards against a typo as queue names do, and `tenant reset` forgets the skip counts."""

from __future__ import annotations

import json

from fairway.queue.access.client import Client
from support.cli import fairway
from support.workers import run_in_process


def test_tenant_show_says_paused_and_json_keys_match_fairway_tenants(redis_url: str) -> None:
    Client(redis_url).enqueue("noop", tenant="t1")
    assert fairway("pause", "--tenant", "t1", redis=redis_url).returncode == 0
    shown = fairway("tenant", "show", "t1", redis=redis_url)
    assert "paused         yes" in shown.stdout, shown.stdout
    view = json.loads(fairway("tenant", "show", "t1", "--json", redis=redis_url).stdout)
    assert view["paused"] is True and "in_flight" in view and "max_in_flight" in view
    assert all(key == key.lower() for key in [*view, *view["sources"]]), view
    [row] = json.loads(fairway("tenants", "--json", redis=redis_url).stdout)
    assert "in_flight" in row and all(key == key.lower() for key in row), row
    assert fairway("continue", "--tenant", "t1", redis=redis_url).returncode == 0
    assert "paused         no" in fairway("tenant", "show", "t1", redis=redis_url).stdout


def test_pause_of_a_tenant_never_seen_is_refused_unless_forced(redis_url: str) -> None:
    Client(redis_url).enqueue("noop", tenant="acme")
    typo = fairway("pause", "--tenant", "acmee", redis=redis_url)
    assert typo.returncode == 1 and "tenant acmee of @tenant- has had no jobs" in typo.stderr
    assert "--force" in typo.stderr and "Traceback" not in typo.stderr
    assert fairway("pause", "--tenant", "acmee", "--force", redis=redis_url).returncode == 0
    assert fairway("pause", "--tenant", "acme", redis=redis_url).returncode == 0


def test_tenant_reset_forgets_the_turns_it_skipped(redis_url: str) -> None:
    client = Client(redis_url)
    client.set_tenant("t1", max_in_flight=1)
    client.enqueue_many("sleep", [[0.1]] * 4, tenant="t1")
    run_in_process(redis_url, tenants={"queue_prefix": "tenant-"}, concurrency=4, burst=True)
    before = json.loads(fairway("tenant", "show", "t1", "--json", redis=redis_url).stdout)
    assert before["capped"] > 0, before
    assert fairway("tenant", "reset", "t1", redis=redis_url).returncode == 0
    after = json.loads(fairway("tenant", "show", "t1", "--json", redis=redis_url).stdout)
    assert (after["capped"], after["throttled"], after["max_in_flight"]) == (0, 0, None), after


def test_every_tenant_verb_names_the_group_the_same_ways(redis_url: str) -> None:
    Client(redis_url).enqueue("noop", tenant="t1")
    for flag in ("--group", "--prefix"):
        for group in ("tenant-", "@tenant-"):
            for verb in (["tenants", "--json"], ["tenant", "show", "t1", "--json"], ["pause", "--tenant", "t1"]):
                out = fairway(*verb, flag, group, redis=redis_url)
                assert out.returncode == 0, (verb, flag, group, out.stderr)
