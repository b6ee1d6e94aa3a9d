"""The fenced code blocks of README.md and docs/*.md, with the marker comment that says how each is tested.

A block is preceded (on the line before it) by one of:
  <!-- runnable ... -->     run as written by tests/integration/docs/test_documented_commands.py
  <!-- quick-path: ... -->  run as written by its own test (tests/integration/cli/test_readme_quick_path.py)
  <!-- not-run: REASON --> not run (it needs a cluster, a registry, or serves until stopped); its
                           fairway command lines are still parsed by the real parser
Only shell and Python blocks need a marker; YAML, JSON and Dockerfile blocks are data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKED_LANGUAGES = {"sh", "bash", "shell", "console", "python", "py"}
_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*(runnable|quick-path|not-run)\b:?\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    marker: str | None  # runnable | quick-path | not-run, or None when unmarked
    reason: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def command_lines(self) -> list[str]:
        """Shell lines with continuations joined and comments cut (a '#' after a space)."""
        joined = re.sub(r"\\\n\s*", " ", self.text)
        out = []
        for raw in joined.splitlines():
            line = re.split(r"\s+#\s", f" {raw.strip()} ", maxsplit=1)[0].strip()
            if line and not line.startswith("#"):
                out.append(line)
        return out


def blocks(paths: list[Path] = DOCUMENTS) -> list[Block]:
    out = []
    for path in paths:
        lines = path.read_text().splitlines()
        index = 0
        while index < len(lines):
            fence = _FENCE.match(lines[index])
            if not fence:
                index += 1
                continue
            start, body = index, []
            index += 1
            while index < len(lines) and not lines[index].startswith("```"):
                body.append(lines[index])
                index += 1
            index += 1
            marker = _MARKER.match(lines[start - 1]) if start > 0 else None
            language = fence.group(1).lower()
            out.append(
                Block(
                    path,
                    start + 1,
                    language,
                    "\n".join(body) + "\n",
                    marker.group(1) if marker else None,
                    marker.group(2) if marker else "",
                )
            )
    return out


def marked_blocks() -> list[Block]:
    return [b for b in blocks() if b.language in MARKED_LANGUAGES]
