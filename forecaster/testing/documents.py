"""The command lines the README and ``docs/`` document, as a user would copy them.

Lines are taken from the documents' code blocks: continuation lines joined, comments dropped,
and lines in usage notation (``[...]`` or `` | ``) left out - those are not commands. The tests
check that every line still parses; ``bench.performance.own_history`` runs the README's
``replay`` lines against a backfilled Prometheus and times them.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md"))]


def code_lines(text: str) -> list[str]:
    """Every line of the code blocks of ``text``, continuation lines joined, comments dropped."""
    lines, block, joined = [], False, ""
    for raw in text.splitlines():
        if raw.startswith("```"):
            block = not block
            continue
        if not block:
            continue
        line = re.sub(r"\s+#.*$", "", raw).rstrip()
        if line.endswith("\\"):
            joined += line[:-1] + " "
            continue
        lines.append((joined + line).strip())
        joined = ""
    return lines


def commands(tool: str, text: str) -> list[str]:
    """The lines of ``text``'s code blocks that run ``tool``."""
    found = []
    for line in code_lines(text):
        words = line.split()  # prose in a code block (the tree) is no command: no shlex here
        if words and words[0].endswith(tool) and "[" not in line and " | " not in line:
            found.append(line)
    return found


def readme_replays() -> list[str]:
    """The README's ``forecaster replay`` lines: each must finish in 5 minutes on 2 cores."""
    return [c for c in commands("forecaster", README.read_text()) if c.split()[1] == "replay"]
