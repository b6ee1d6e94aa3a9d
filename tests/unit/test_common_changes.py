"""ARCHITECTURE.md's "where to make the common changes", held true by grepping the source: each concept
is defined in one table and read from it, so each listed change is made in the one or two places the
list names, and a name compared anywhere else (which would make the change a hunt) fails here."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from fairway.cli import build_parser
from fairway.queue.access.client import ENQUEUE_OPTIONS, Client
from fairway.queue.protocol.job import JOB_OPTIONS
from fairway.resource.balance import POLICIES, STRATEGIES, Balance, ScalingStrategy

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*ROOT.glob("worker/fairway/**/*.py"), *ROOT.glob("operator/fairway_operator/**/*.py")])


def files_matching(pattern: str, under: str = "") -> set[str]:
    found = set()
    for path in SOURCES:
        name = str(path.relative_to(ROOT))
        if name.startswith(under) and re.search(pattern, path.read_text()):
            found.add(name)
    return found


def architecture_lists(change: str) -> str:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    match = re.search(rf"^- \*\*{re.escape(change)}[^\n]*(?:\n  [^\n]*)*", text, re.M)
    assert match, f"ARCHITECTURE.md lists {change!r} under the common changes"
    return match.group(0)


def test_a_balance_mode_is_a_row_in_policies() -> None:
    assert "`POLICIES`" in architecture_lists("A new balance mode")
    assert set(POLICIES) == set(Balance)
    members = r"\bBalance\.(" + "|".join(m.name for m in Balance) + r")\b"
    assert files_matching(members) <= {"worker/fairway/resource/balance.py", "worker/fairway/resource/spec.py"}, (
        "a mode is named only by its row (and the spec's default); everything else asks the policy"
    )
    names = "|".join(m.value for m in Balance)
    assert not files_matching(rf"balance\s*(==|!=)\s*[\"']({names})[\"']"), "no mode compared by name"


def test_a_scaling_strategy_is_a_row_in_strategies() -> None:
    listed = architecture_lists("A new scaling policy")
    assert "`STRATEGIES`" in listed and "`ScalingStrategy`" in listed
    assert set(STRATEGIES) == set(ScalingStrategy)
    members = r"\bScalingStrategy\.(" + "|".join(m.name for m in ScalingStrategy) + r")\b"
    assert files_matching(members) == {"worker/fairway/resource/balance.py"}, (
        "a strategy is named only by its row; the planner, the reads and the baseline ask the row"
    )
    names = "|".join(m.value for m in ScalingStrategy)
    assert not files_matching(rf"strategy\s*(==|!=|is)\s*[\"']?({names})\b"), "no strategy compared by name"
    assert not files_matching(r"strategy\s*(==|!=|is not|is)\s*ScalingStrategy"), "no strategy compared by member"


def test_a_job_option_is_a_row_in_job_options_and_a_keyword_of_enqueue() -> None:
    listed = architecture_lists("A new job option")
    assert "`JOB_OPTIONS`" in listed and "`Client.enqueue`" in listed
    enqueue = inspect.signature(Client.enqueue).parameters
    parser = build_parser()
    node = (ROOT / "clients/node/src/index.js").read_text()
    listing = re.search(r"const ENQUEUE_OPTIONS = \[([^\]]*)\]", node)
    assert listing, "the Node client lists its enqueue options"
    node_options = set(re.findall(r"'(\w+)'", listing.group(1)))
    protocol = (ROOT / "docs/protocol.md").read_text()
    for option in JOB_OPTIONS:
        # Encoded, decoded and checked from the row: its name is a literal nowhere else on the producer
        # and worker side (the worker setting of the same name lives in resource/).
        assert files_matching(rf"[\"']{option.name}[\"']", under="worker/fairway/queue") == {
            "worker/fairway/queue/protocol/job.py"
        }, option.name
        assert option.name in enqueue and enqueue[option.name].kind is inspect.Parameter.KEYWORD_ONLY, option.name
        assert option.name in ENQUEUE_OPTIONS
        flag = f"--{option.name.replace('_', '-')}"
        parsed = getattr(parser.parse_args(["enqueue", "noop", flag, "2"]), option.name)
        assert parsed == option.flag_type("2"), f"fairway enqueue {flag}"
        camel = re.sub(r"_(\w)", lambda m: m.group(1).upper(), option.name)
        assert camel in node_options, f"the Node client's enqueue takes {camel}"
        assert f"| `{option.name}` |" in protocol, f"docs/protocol.md's document fields list {option.name}"
    camel_python = {re.sub(r"_(\w)", lambda m: m.group(1).upper(), o) for o in ENQUEUE_OPTIONS}
    assert node_options == camel_python, "the Node client's options are the Python client's"
