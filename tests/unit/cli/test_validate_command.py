"""`fairway validate`: exit 0 with warnings, 1 with one field-named line per error, 2 for unusable input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fairway.cli import main

GOOD = """\
apiVersion: fairway.dev/v1alpha1
kind: QueueSupervisor
metadata: {name: good}
spec:
  redis: {url: "redis://r:6379/0"}
  queues: [high, low]
  queueWeights: {high: 3, low: 0}
"""
BAD = """\
apiVersion: fairway.dev/v1alpha1
kind: QueueSupervisor
metadata: {name: bad}
spec:
  redis: {url: "redis://r:6379/0"}
  queues: [high, low]
  balance: simple
  queueWeights: {high: 3}
  pausedQueues: [urgent]
"""


def run(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    path = tmp_path / "manifest.yaml"
    path.write_text(text)
    code = main(["validate", "-f", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def test_valid_manifest_exits_0_and_prints_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(tmp_path, GOOD, capsys)
    assert code == 0
    assert err == ""
    assert "document 1 (good): warning: spec.queueWeights.low: weight 0 is ignored and counts as 1" in out


def test_invalid_document_exits_1_one_line_per_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(tmp_path, GOOD + "---\n" + BAD, capsys)
    lines = err.strip().splitlines()
    assert code == 1
    assert len(lines) == 2
    assert all(": document 2 (bad): " in line for line in lines)
    assert "spec.queueWeights: The [bad.queueWeights] option only applies when [balance] is none" in lines[0]
    assert "spec.pausedQueues: [pausedQueues] names a queue that is not in [queues]" in lines[1]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("queues: [unclosed\n", "not valid YAML"),
        ("apiVersion: v1\nkind: ConfigMap\n", "not a QueueSupervisor"),
        ("- just\n- a list\n", "expected a mapping"),
        ("", "no documents found"),
    ],
)
def test_unusable_input_exits_2_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    code, _, err = run(tmp_path, text, capsys)
    assert code == 2
    assert expected in err
    assert "Traceback" not in err


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-f", "/nonexistent/qs.yaml"]) == 2
    assert "cannot read /nonexistent/qs.yaml" in capsys.readouterr().err


def test_stdin_through_the_installed_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fairway.cli", "validate", "-f", "-"], input=BAD, capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "stdin: document 1 (bad): spec.queueWeights" in proc.stderr


def test_crd_command_prints_the_committed_crd(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crd"]) == 0
    committed = Path(__file__).resolve().parents[3] / "crds" / "queuesupervisors.fairway.dev.yaml"
    assert capsys.readouterr().out == committed.read_text()
