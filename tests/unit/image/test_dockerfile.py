"""What can be checked about the image without a Docker engine (none runs here): see docs/deploy.md."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from fairway.cli import build_parser

ROOT = Path(__file__).resolve().parents[3]


def instructions() -> list[tuple[str, str]]:
    lines, current = [], ""
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        if raw.strip().startswith("#") or not raw.strip():
            continue
        current += raw.rstrip("\\").strip() + " "
        if not raw.rstrip().endswith("\\"):
            word, _, rest = current.strip().partition(" ")
            lines.append((word.upper(), rest.strip()))
            current = ""
    return lines


def stages() -> list[list[tuple[str, str]]]:
    out: list[list[tuple[str, str]]] = []
    for instruction in instructions():
        if instruction[0] == "FROM":
            out.append([])
        out[-1].append(instruction)
    return out


def test_multi_stage_with_a_slim_base_and_the_venv_copied() -> None:
    build, final = stages()
    assert build[0][1].startswith("python:3.11-slim") and final[0][1].startswith("python:3.11-slim")
    copies = [rest for word, rest in final if word == "COPY"]
    assert copies == ["--from=build /opt/fairway /opt/fairway"]
    assert not [rest for word, rest in final if word == "RUN"], "no build steps (and no build tools) in the final stage"


def test_runs_as_a_numeric_non_root_user() -> None:
    users = [rest for word, rest in stages()[-1] if word == "USER"]
    assert users, "the final stage sets USER"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) > 0 and (not gid or gid.isdigit())


def test_entrypoints_exist_in_the_installed_package() -> None:
    final = dict(stages()[-1])
    entrypoint = json.loads(final["ENTRYPOINT"])
    command = json.loads(final["CMD"])
    assert entrypoint == ["fairway"]
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'fairway = "fairway.cli:main"' in pyproject
    parser = build_parser()
    args = parser.parse_args(command)
    assert args.verb == "worker" and args.config == "/etc/fairway/worker.yaml"
    operator = parser.parse_args(shlex.split("operator --all-namespaces --liveness=http://0.0.0.0:8080/healthz"))
    assert operator.verb == "operator"


def test_the_image_paths_match_what_the_operator_and_chart_use() -> None:
    from fairway_operator.desired import CONFIG_PATH, RUN_AS

    final = dict(stages()[-1])
    assert json.loads(final["CMD"])[-1] == CONFIG_PATH
    assert final["USER"].split(":")[0] == str(RUN_AS)
    chart = (ROOT / "charts" / "fairway" / "templates" / "deployment.yaml").read_text()
    assert f"runAsUser: {RUN_AS}" in chart
