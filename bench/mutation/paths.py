"""Where the mutation run keeps its working state (under ``.mutation/``, not committed) and
where it publishes its result (``docs/results/mutation.json``, committed)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
STATE = ROOT / ".mutation"
RESULT = ROOT / "docs" / "results" / "mutation.json"

# inside each working copy
PRISTINE = Path(".pristine")
TESTS_MAP = Path(".tests-map.json")
TEST_GROUP = Path(".test-group")  # the process group of the mutant's pytest, while it runs

# what a working copy holds (a `git archive` of HEAD: the run judges a commit)
COPIED = (
    "forecaster",
    "tests",
    "data",
    "config",
    "deploy",
    "scripts",
    "bench",
    "docs",
    "models",
    "pyproject.toml",
    "README.md",
    ".dockerignore",
    ".ci",
)
