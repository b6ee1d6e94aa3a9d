"""README's five-minute path, run as written (only the Redis URL and the venv path are this test's):
a handler from the current folder, a bare @fairway.job name, enqueue, queues, a burst worker."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"


def quick_path() -> str:
    text = README.read_text()
    marker = text.index("<!-- quick-path:")
    block = re.search(r"```sh\n(.*?)```", text[marker:], re.S)
    assert block is not None, "README lost its quick-path block"
    return block.group(1)


def test_the_readme_quick_path_works_as_written(redis_url: str, tmp_path: Path) -> None:
    script = quick_path()
    assert "export FAIRWAY_REDIS_URL=redis://127.0.0.1:6379/0" in script
    assert "source /path/to/fairway/.venv/bin/activate" in script
    script = script.replace("redis://127.0.0.1:6379/0", redis_url).replace(
        "/path/to/fairway/.venv/bin/activate", str(Path(sys.executable).parent / "activate")
    )
    out = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert re.fullmatch(r"[0-9a-f]{32}", lines[0]), lines[0]
    assert lines[1] == "enqueued 3 jobs"
    tables = [i for i, line in enumerate(lines) if line.startswith("QUEUE")]
    assert len(tables) == 2
    assert lines[tables[0] + 1].split()[:2] == ["default", "4"]
    assert lines[tables[1] + 1].split()[:2] == ["default", "0"] and lines[tables[1] + 1].split()[4] == "0"
    assert sum(line.startswith("slept ") and "(attempt 1)" in line for line in lines) == 4
    assert lines[-1] == "no failed jobs in default"
    assert "Traceback" not in out.stderr
