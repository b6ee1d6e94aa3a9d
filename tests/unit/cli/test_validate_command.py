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
        ("apiVersion: v1\nkind: ConfigMap\n", "no QueueSupervisor in it (kind: QueueSupervisor); it holds document 1"),
        ("- just\n- a list\n", "a list, not a Kubernetes object"),
        ("", "no QueueSupervisor in it"),
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


def test_several_files_each_reported_and_one_bad_file_hides_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.yaml").write_text(GOOD)
    (tmp_path / "b.yaml").write_text(BAD)
    (tmp_path / "c.yaml").write_text("queues: [unclosed\n")
    code = main(["validate", "-f", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"), "-f", str(tmp_path / "c.yaml")])
    out, err = capsys.readouterr()
    assert code == 2, "the worst outcome: c.yaml is unusable"
    assert "a.yaml: document 1 (good): valid" in out
    assert "b.yaml: document 1 (bad): spec.queueWeights" in err
    assert "c.yaml: not valid YAML" in err


def test_other_kinds_are_skipped_with_a_note_and_the_supervisors_still_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"
    code, out, err = run(tmp_path, GOOD + "---\n" + config_map + "---\n" + BAD, capsys)
    assert code == 1
    assert "document 2 (ConfigMap settings): skipped, not a QueueSupervisor" in err
    assert "document 1 (good): valid" in out
    assert "document 3 (bad): spec.queueWeights" in err


def test_yaml_errors_keep_the_line_the_column_and_the_marker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(tmp_path, "spec:\n  queues: [a,\n  balance: none\n", capsys)
    assert code == 2
    lines = err.splitlines()
    assert "not valid YAML: line" in lines[0]
    marker = next(i for i, line in enumerate(lines) if line.strip() == "^")
    assert lines[marker - 1].strip() == "queues: [a,"
    assert lines[marker].index("^") == lines[marker - 1].index("[")


def test_a_key_written_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(tmp_path, GOOD + "  maxProcesses: 3\n  maxProcesses: 4\n", capsys)
    assert code == 2
    assert "line 9, column 3: duplicate key 'maxProcesses' (first on line 8): YAML would keep only the last" in err


@pytest.mark.parametrize(
    ("field", "says"),
    [
        ("minProccesses: 2", "spec.minProccesses: unknown field; did you mean minProcesses?"),
        ("balanse: auto", "spec.balanse: unknown field; did you mean balance?"),
        (
            "tenants: {maxConsecutive: 3}",
            "spec.tenants.maxConsecutive: unknown field; did you mean maxConsecutiveJobs?",
        ),
        ("maxProcesses: 0", "spec.maxProcesses: must be at least 1, not 0"),
        ("maxProcesses: lots", "spec.maxProcesses: must be a whole number, not 'lots'"),
    ],
)
def test_messages_name_the_nearest_field_and_never_speak_pydantic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, says: str
) -> None:
    code, _, err = run(tmp_path, GOOD + f"  {field}\n", capsys)
    assert code == 1
    assert says in err
    assert "Input should" not in err and "Field required" not in err and "Value error" not in err


def test_a_name_the_api_server_refuses_is_refused_here(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(tmp_path, GOOD.replace("name: good", "name: Bad_Name"), capsys)
    assert code == 1
    assert "metadata.name: 'Bad_Name' is not a valid Kubernetes name" in err and "(for example bad-name)" in err


def test_weights_with_balancing_says_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, err = run(tmp_path, BAD, capsys)
    assert "Fix: drop queueWeights, or set balance: none" in err
