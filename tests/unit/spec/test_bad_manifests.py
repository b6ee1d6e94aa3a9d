"""Every bad manifest is refused by the API server's path (CRD schema + CEL) and by Python, with the same meaning."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fairway.resource.manifests import validate_document
from fairway.resource.rules import RULES
from support.admission import admit

RULE_TEXT = {rule.key: rule for rule in RULES}


def base() -> dict[str, Any]:
    return {
        "apiVersion": "fairway.dev/v1alpha1",
        "kind": "QueueSupervisor",
        "metadata": {"name": "shop"},
        "spec": {"redis": {"url": "redis://redis:6379/0"}, "queues": ["high", "default", "low"]},
    }


def with_spec(**changes: Any) -> dict[str, Any]:
    doc = base()
    for key, value in changes.items():
        if value is None:
            doc["spec"].pop(key, None)
        else:
            doc["spec"][key] = value
    return doc


SCHEDULE = {"name": "nightly", "cron": "0 3 * * *", "handler": "report", "queue": "high"}

# (id, manifest, the field both sides must name, the rule whose words both must print or None)
BAD: list[tuple[str, dict[str, Any], str, str | None]] = [
    (
        "weights-with-simple",
        with_spec(balance="simple", queueWeights={"high": 3}),
        "spec.queueWeights",
        "weights-need-balance-none",
    ),
    (
        "weights-with-auto",
        with_spec(balance="auto", queueWeights={"high": 3}),
        "spec.queueWeights",
        "weights-need-balance-none",
    ),
    (
        "tenant-weight-with-auto",
        with_spec(balance="auto", tenants={"weight": 2}),
        "spec.tenants.weight",
        "tenant-weight-needs-balance-none",
    ),
    ("no-queues-no-tenants", with_spec(queues=None), "spec.queues", "needs-work"),
    ("duplicate-queue", with_spec(queues=["high", "low", "high"]), "spec.queues", "queues-unique"),
    (
        "weight-for-unknown-queue",
        with_spec(queueWeights={"urgent": 2}),
        "spec.queueWeights",
        "weights-name-known-queues",
    ),
    ("paused-unknown-queue", with_spec(pausedQueues=["urgent"]), "spec.pausedQueues", "paused-name-known-queues"),
    ("min-above-max", with_spec(minProcesses=5, maxProcesses=3), "spec.minProcesses", "min-not-above-max"),
    ("min-above-default-max", with_spec(minProcesses=11), "spec.minProcesses", "min-not-above-max"),
    ("max-below-pools", with_spec(balance="simple", maxProcesses=2), "spec.maxProcesses", "max-covers-pools"),
    (
        "max-below-pools-with-tenants",
        with_spec(balance="auto", maxProcesses=3, tenants={}),
        "spec.maxProcesses",
        "max-covers-pools",
    ),
    (
        "queue-looks-like-tenant",
        with_spec(queues=["tenant-7"], tenants={}),
        "spec.tenants.queuePrefix",
        "tenant-prefix-distinct",
    ),
    (
        "redis-url-and-secret",
        with_spec(redis={"url": "redis://r:6379", "secretRef": {"name": "s", "key": "u"}}),
        "spec.redis",
        "redis-one-source",
    ),
    ("redis-neither", with_spec(redis={"cluster": True}), "spec.redis", "redis-one-source"),
    (
        "redis-password-in-query",
        with_spec(redis={"url": "redis://redis:6379/0?password=hunter2"}),
        "spec.redis.url",
        "redis-url-no-credentials",
    ),
    (
        "redis-username-in-query",
        with_spec(redis={"url": "rediss://redis:6379/0?ssl_cert_reqs=none&Username=app"}),
        "spec.redis.url",
        "redis-url-no-credentials",
    ),
    (
        "redis-password-inline",
        with_spec(redis={"url": "redis://:hunter2@r:6379/0"}),
        "spec.redis.url",
        "redis-url-no-credentials",
    ),
    ("queue-name-with-brace", with_spec(queues=["a{b}"]), "spec.queues", None),
    ("queue-name-too-long", with_spec(queues=["q" * 64]), "spec.queues", None),
    ("too-many-queues", with_spec(queues=[f"q{i}" for i in range(65)]), "spec.queues", None),
    ("block-for-above-60", with_spec(blockFor=61), "spec.blockFor", None),
    ("balance-yaml-false", with_spec(balance=False), "spec.balance", None),
    ("balance-unknown-word", with_spec(balance="round-robin"), "spec.balance", None),
    ("typo-field", with_spec(queueWeight={"high": 3}), "spec.queueWeight", None),
    ("zero-tries", with_spec(tries=0), "spec.tries", None),
    (
        "sample-rate-zero",
        with_spec(tenants={"quarantine": {"sampleRate": 0}}),
        "spec.tenants.quarantine.sampleRate",
        None,
    ),
    (
        "tenant-override-twice",
        with_spec(tenants={"overrides": [{"tenant": "acme", "weight": 2}, {"tenant": "acme", "rate": 5}]}),
        "spec.tenants.overrides",
        "tenant-overrides-unique",
    ),
    ("tenant-weight-zero", with_spec(tenants={"defaults": {"weight": 0}}), "spec.tenants.defaults.weight", None),
    (
        "tenant-weight-negative",
        with_spec(tenants={"overrides": [{"tenant": "a", "weight": -1}]}),
        "spec.tenants.overrides",
        None,
    ),
    ("tenant-cap-zero", with_spec(tenants={"defaults": {"maxInFlight": 0}}), "spec.tenants.defaults.maxInFlight", None),
    ("tenant-rate-words", with_spec(tenants={"defaults": {"rate": "ten/s"}}), "spec.tenants.defaults.rate", None),
    (
        "tenant-override-bad-id",
        with_spec(tenants={"overrides": [{"tenant": "bad id:{x}", "weight": 2}]}),
        "spec.tenants.overrides",
        None,
    ),
    (
        "tenant-overrides-over-100",
        with_spec(tenants={"overrides": [{"tenant": f"t{i}", "weight": 2} for i in range(101)]}),
        "spec.tenants.overrides",
        None,
    ),
    (
        "run-time-share-zero",
        with_spec(tenants={"quarantine": {"runTimeShare": 0}}),
        "spec.tenants.quarantine.runTimeShare",
        None,
    ),
    ("strategy-unknown", with_spec(autoScalingStrategy="fast"), "spec.autoScalingStrategy", None),
    ("handler-module-not-a-module", with_spec(worker={"handlers": ["os;rm -rf"]}), "spec.worker.handlers", None),
    ("redis-url-http", with_spec(redis={"url": "http://r:6379"}), "spec.redis.url", None),
    ("missing-redis", with_spec(redis=None), "spec.redis", None),
    ("negative-backoff", with_spec(backoff=[1, -5]), "spec.backoff", None),
    # Types as the CRD declares them (the API server converts nothing): what `fairway validate` once let by.
    ("tries-boolean", with_spec(tries=True), "spec.tries", None),
    ("concurrency-string", with_spec(worker={"concurrency": "4"}), "spec.worker.concurrency", None),
    ("timeout-string", with_spec(timeout="60"), "spec.timeout", None),
    ("weight-string", with_spec(queueWeights={"default": "3"}), "spec.queueWeights.default", None),
    ("max-processes-fraction", with_spec(maxProcesses=2.5), "spec.maxProcesses", None),
    ("max-processes-whole-float", with_spec(maxProcesses=4.0), "spec.maxProcesses", None),
    ("block-for-string", with_spec(blockFor="5"), "spec.blockFor", None),
    ("cluster-string", with_spec(redis={"url": "redis://r:6379/0", "cluster": "yes"}), "spec.redis.cluster", None),
    ("queues-a-string", with_spec(queues="high"), "spec.queues", None),
    ("queue-name-number", with_spec(queues=[7]), "spec.queues", None),
    ("tenant-rate-boolean", with_spec(tenants={"defaults": {"rate": True}}), "spec.tenants.defaults.rate", None),
    ("backoff-strings", with_spec(backoff=["1", "5"]), "spec.backoff", None),
    ("memory-string", with_spec(memory="256Mi"), "spec.memory", None),
    # Schedules (docs/schedules.md)
    (
        "schedule-named-twice",
        with_spec(schedules=[{"name": "n", "every": 5, "handler": "h", "queue": "high"}] * 2),
        "spec.schedules",
        "schedule-names-unique",
    ),
    (
        "schedule-queue-not-served",
        with_spec(schedules=[{"name": "n", "every": 5, "handler": "h", "queue": "elsewhere"}]),
        "spec.schedules",
        "schedule-queue-served",
    ),
    (
        "schedule-tenant-without-group",
        with_spec(schedules=[{"name": "n", "every": 5, "handler": "h", "tenant": "acme"}]),
        "spec.schedules",
        "schedule-tenant-needs-group",
    ),
    ("schedule-bad-cron", with_spec(schedules=[SCHEDULE | {"cron": "61 * * * *"}]), "spec.schedules", None),
    ("schedule-cron-and-every", with_spec(schedules=[SCHEDULE | {"every": 60}]), "spec.schedules", None),
    ("schedule-no-target", with_spec(schedules=[{"name": "n", "every": 5, "handler": "h"}]), "spec.schedules", None),
    (
        "schedule-every-zero",
        with_spec(schedules=[{"name": "n", "every": 0, "handler": "h", "queue": "high"}]),
        "spec.schedules",
        None,
    ),
    ("schedule-name-upper", with_spec(schedules=[SCHEDULE | {"name": "Nightly"}]), "spec.schedules", None),
]


def _crd_path(path: str) -> str:
    """`.spec.queues[2]` -> `spec.queues` (what the user reads either way)."""
    return path.lstrip(".").split("[")[0]


@pytest.mark.parametrize(("manifest", "field", "rule_key"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_manifest_is_refused_by_crd_and_python_alike(
    manifest: dict[str, Any], field: str, rule_key: str | None
) -> None:
    report = validate_document(copy.deepcopy(manifest))
    rejections = admit(manifest)

    assert not report.valid, "Python accepted a manifest the rules forbid"
    assert rejections, "the CRD would admit a manifest the rules forbid"
    assert any(p.field.split(".")[: field.count(".") + 1] == field.split(".") for p in report.errors), (
        f"Python did not name {field}: {report.errors}"
    )
    assert any(_crd_path(r.path).startswith(field) for r in rejections), f"the CRD did not name {field}: {rejections}"
    if rule_key is not None:
        rule = RULE_TEXT[rule_key]
        # the same words from the API server and from Python, the object's name included
        assert rule.text("shop") in [r.message for r in rejections if r.source == "cel"]
        assert rule.text("shop") in [p.message for p in report.errors]


@pytest.mark.parametrize("cron", ["61 * * * *", "* * * *", "*/0 * * * *", "0 0 * * 8", "every day"])
def test_a_bad_cron_expression_gets_the_same_words_from_the_api_server_and_python(cron: str) -> None:
    from fairway.resource.schedules import CRON_MESSAGE

    manifest = with_spec(schedules=[SCHEDULE | {"cron": cron}])
    cel = [(r.path, r.message) for r in admit(manifest) if r.source == "cel"]
    assert cel == [(".spec.schedules[0].cron", CRON_MESSAGE)]
    assert [(p.field, p.message) for p in validate_document(manifest).errors] == [
        ("spec.schedules.0.cron", CRON_MESSAGE)
    ]


def test_a_good_schedule_is_admitted_by_both() -> None:
    tenant = {
        "name": "sync",
        "every": 300,
        "handler": "sync",
        "tenant": "acme",
        "missed": "once",
        "args": [1, {"a": 2}],
    }
    manifest = with_spec(
        tenants={}, schedules=[SCHEDULE | {"timezone": "Europe/Paris", "kwargs": {"f": "pdf"}}, tenant]
    )
    assert admit(manifest) == []
    assert validate_document(manifest).valid


def test_weights_message_follows_the_seed_wording() -> None:
    report = validate_document(with_spec(balance="simple", queueWeights={"high": 3}))
    assert [str(p) for p in report.errors] == [
        "spec.queueWeights: The [shop.queueWeights] option only applies when [balance] is none; "
        "each queue gets its own pool when balancing. Fix: drop queueWeights, or set balance: none to share one "
        "weighted pool."
    ]


def test_every_rule_has_a_bad_manifest() -> None:
    covered = {b[3] for b in BAD}
    assert covered >= {rule.key for rule in RULES}


def test_zero_and_negative_weights_are_warnings_not_errors() -> None:
    report = validate_document(with_spec(queueWeights={"high": 0, "low": -2, "default": 1}))
    assert report.valid
    assert report.spec is not None
    assert report.spec.effective_weights() == {"high": 1, "default": 1, "low": 1}
    assert len(report.warnings) == 3
    assert any("spec.queueWeights.high: weight 0 is ignored" in w for w in report.warnings)
    assert any("spec.queueWeights.default: weight 1 is the default" in w for w in report.warnings)
    assert admit(with_spec(queueWeights={"high": 0, "low": -2})) == []
