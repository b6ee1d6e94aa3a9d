"""What can be checked about the Dockerfile without a Docker engine; tests/integration/image builds
and runs the image where one can run."""

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
        if instruction[0] == "ARG" and not out:
            continue  # the ARGs before the first FROM (the base)
        if instruction[0] == "FROM":
            out.append([])
        out[-1].append(instruction)
    return out


def test_the_default_base_is_the_public_slim_python_pinned_by_digest() -> None:
    (base,) = [rest for word, rest in instructions() if word == "ARG" and rest.startswith("BASE=")]
    image, _, digest = base.removeprefix("BASE=").partition("@")
    assert image.startswith("python:3.11") and "slim" in image
    assert digest.startswith("sha256:") and len(digest) == len("sha256:") + 64


def test_dependencies_come_from_the_lock_in_a_layer_before_the_source() -> None:
    build = [f"{word} {rest}" for word, rest in stages()[0]]
    lock = build.index("RUN /opt/fairway/bin/pip install --require-hashes -r /src/requirements/runtime.txt")
    source = next(i for i, line in enumerate(build) if line.startswith("COPY worker"))
    assert lock < source
    assert build[-1] == "RUN /opt/fairway/bin/pip install --no-deps --no-build-isolation /src"


def test_multi_stage_with_a_slim_base_and_the_venv_copied() -> None:
    build, final = stages()
    assert build[0][1] == "${BASE} AS build" and final[0][1] == "${BASE} AS runtime"
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
