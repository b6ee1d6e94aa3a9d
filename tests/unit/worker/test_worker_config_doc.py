"""docs/worker.md lists every key of the worker's config file (`fairway worker --config`), with its
default, its flag and its meaning, as WorkerSettings defines them: a key added to the settings and not
to the page (or a default changed on one side only) fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fairway.resource.worker_settings import SETTING_NAMES, WorkerSettings

DOC = Path(__file__).resolve().parents[3] / "docs" / "worker.md"
EXTRA_FLAGS = {
    "redis_url": "--redis",
    "cluster": "--cluster",
    "queues": "--queues",
    "weights": "--weight",
    "handlers": "--handlers",
    "tenants": "--tenants",
    "burst": "--burst",
}


def rows() -> list[str]:
    flags = {n.setting: f"--{n.flag.replace('_', '-')}" for n in SETTING_NAMES if n.flag}
    out = []
    for name, field in WorkerSettings.model_fields.items():
        default = json.dumps(field.get_default(call_default_factory=True))
        flag = flags.get(name) or EXTRA_FLAGS.get(name, "-")
        out.append(f"| `{name}` | `{default}` | `{flag}` | {field.description} |")
    return out


def test_the_page_lists_every_key_with_its_default_and_flag() -> None:
    text = DOC.read_text()
    listed = [line for line in text.splitlines() if re.match(r"^\| `[a-z_]+` \|", line)]
    assert listed == rows(), "regenerate the table: python -c 'from tests...rows' (see this test)"


def test_backoff_is_a_flag_too() -> None:
    from fairway.cli import build_parser
    from fairway.cli.worker_verb import worker_settings

    args = build_parser().parse_args(["worker", "--redis", "redis://r:6379/0", "--queues", "q", "--backoff", "1,5,30"])
    assert worker_settings(args).backoff_s == [1, 5, 30]
