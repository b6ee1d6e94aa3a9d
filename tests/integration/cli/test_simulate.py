"""`fairway simulate` as a user runs it (a process): the three policies on a committed trace, JSON
and the picture, and every kind of bad trace refused in one line naming the file's line and column."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support.cli import fairway

ROOT = Path(__file__).parents[3]
TRACES = ROOT / "bench" / "traces"
SUPERVISOR = TRACES / "three-queues.yaml"


def simulate(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return fairway("simulate", *args, cwd=cwd, timeout=120)


def test_json_compares_the_three_policies_on_one_trace() -> None:
    done = simulate("-f", str(SUPERVISOR), "--trace", str(TRACES / "steady.csv"), "--compare", "horizon,keda", "--json")
    assert done.returncode == 0, done.stderr
    policies = json.loads(done.stdout)["policies"]
    assert set(policies) == {"fairway", "horizon", "keda"}
    keys = {
        "replica_changes",
        "pod_starts",
        "pod_kills",
        "pod_seconds",
        "busy_slot_seconds",
        "jobs_done",
        "wait_ms",
        "changes",
    }
    for result in policies.values():
        assert set(result) == keys
        assert result["jobs_done"] == 5385 and set(result["wait_ms"]) == {"high", "default", "low"}
        assert all(set(w) == {"p50", "p99"} for w in result["wait_ms"].values())
        assert result["replica_changes"] == len(result["changes"])
        assert all(set(c) == {"t_s", "pool", "from", "to", "reason"} for c in result["changes"])
    assert policies["fairway"]["replica_changes"] < policies["horizon"]["replica_changes"]


def test_the_table_and_the_picture(tmp_path: Path) -> None:
    picture = tmp_path / "burst.png"
    done = simulate(
        "-f", str(SUPERVISOR), "--trace", str(TRACES / "burst.csv"), "--compare", "horizon", "--plot", str(picture)
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["policy", "changes", "starts"]
    assert [line.split()[0] for line in lines[1:]] == ["fairway", "horizon"]
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.stat().st_size > 20_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("t_s,queue,jobs,run_ms\n0,nope,1,100\n", "trace.csv:2: column queue: unknown queue 'nope'"),
        ("t_s,queue,jobs,run_ms\n-1,high,1,100\n", "trace.csv:2: column t_s: -1 is negative"),
        ("t_s,queue,jobs\n0,high,1\n", "trace.csv:1: missing column run_ms"),
        (
            "t_s,queue,jobs,run_ms\n5,high,1,100\n1,high,1,100\n",
            "trace.csv:3: column t_s: 1 is before the row above (5)",
        ),
        ("t_s,queue,jobs,run_ms\n0,high,one,100\n", "trace.csv:2: column jobs: 'one' is not a whole number"),
        ("t_s,queue,jobs,run_ms\n0,high,1,0\n", "trace.csv:2: column run_ms: 0 must be above 0"),
        ("t_s,queue,jobs,run_ms\n0,high,1\n", "trace.csv:2: 3 fields, the header has 4"),
        (
            "t_s,queue,jobs,run_ms,tenant\n0,high,1,100,acme\n",
            "trace.csv:2: column tenant: the supervisor has no tenants",
        ),
        ("\x89PNG\r\n\x1a\n\x00\x00", "trace.csv: not a CSV text file"),
        ("", "trace.csv: empty; the first line must be the header t_s,queue,jobs,run_ms"),
    ],
    ids=[
        "unknown-queue",
        "negative-time",
        "missing-column",
        "unsorted",
        "not-a-number",
        "zero-run",
        "short-row",
        "no-tenants",
        "binary",
        "empty",
    ],
)
def test_a_bad_trace_is_one_clear_line_and_the_usage_exit_code(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "trace.csv").write_bytes(text.encode("latin-1"))
    done = simulate("-f", str(SUPERVISOR), "--trace", "trace.csv", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"fairway simulate: {expected}"), line
    assert "Traceback" not in done.stderr


def test_a_missing_trace_and_a_bad_flag_are_usage_errors(tmp_path: Path) -> None:
    done = simulate("-f", str(SUPERVISOR), "--trace", str(tmp_path / "none.csv"))
    assert done.returncode == 2 and "cannot read" in done.stderr and "Traceback" not in done.stderr
    done = simulate("-f", str(SUPERVISOR), "--trace", str(TRACES / "steady.csv"), "--compare", "hpa")
    assert done.returncode == 2 and "unknown policy 'hpa'" in done.stderr
    done = simulate("-f", str(SUPERVISOR), "--trace", str(TRACES / "steady.csv"), "--pod-start-s", "soon")
    assert done.returncode == 2 and "'soon' is not a number of seconds" in done.stderr


def test_the_policies_share_each_pools_waiting_jobs_scale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Side by side, one backlog scale per pool: 1,500 waiting jobs must not look like 16."""
    import matplotlib.pyplot as plt

    from fairway.cli import main

    kept: list[object] = []
    monkeypatch.setattr(plt, "close", kept.append)
    trace = TRACES / "burst.csv"
    assert main(["simulate", "-f", str(SUPERVISOR), "--trace", str(trace), "--compare", "horizon,keda", "--plot",
                 str(tmp_path / "p.png")]) == 0  # fmt: skip
    [fig] = kept
    axes = fig.axes  # type: ignore[attr-defined]
    twins = axes[len(axes) // 2 :]  # the grid's axes come first, each one's waiting-jobs twin after
    rows: dict[tuple[float, float], list[tuple[float, float]]] = {}
    for twin in twins:
        box = twin.get_position()
        rows.setdefault((round(box.y0, 3), round(box.y1, 3)), []).append(twin.get_ylim())
    assert len(rows) >= 2 and all(len(limits) == 3 for limits in rows.values())
    assert all(len(set(limits)) == 1 for limits in rows.values()), rows
