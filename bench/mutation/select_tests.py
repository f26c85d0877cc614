"""cosmic-ray's test command: run the tests that execute the mutated lines, fastest first.

cosmic-ray writes one mutant into the scoped module in this working copy and runs this (the
working directory is the copy). It says nothing about which mutant, so the mutated lines are
found by comparing each scoped module with the pristine copy kept beside it; the tests that
cover those lines come from the coverage map (``tests_map``). Exit 0 means the mutant survived,
anything else that a test failed (or the mutant broke the import: also caught).

A line no in-process test covers (reached only by a subprocess test, or by nothing) falls back
to the curated mutation check's tests for that file; no test at all is a survivor. Only the
fastest tests that fit a time budget run (``within``); ``run --confirm`` runs them all.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from bench.mutation.paths import PRISTINE, TEST_GROUP, TESTS_MAP

PYTEST_NO_TESTS = 5
PYTEST_USAGE_ERROR = 4
MUTANT_TIMEOUT_SECONDS = 240  # cosmic-ray's limit; its tests take ~15 s, past this it loops
CONFIRM_TIMEOUT_SECONDS = 3600  # every covering test of a survivor
# pytest is stopped here first, so it never outlives this command: cosmic-ray kills only the
# command's process group, and pytest runs in its own (``run_pytest``)
OWN_MARGIN_SECONDS = 30
# A mutant gets the fastest covering tests that fit in this many seconds of test time: a line
# of the planner is run by 160 tests (10 minutes), most of them whole reconcile loops. A
# survivor of the budget is run against every covering test by ``run --confirm``.
DEFAULT_BUDGET_SECONDS = "15"
BUDGET_VARIABLE = "MUTATION_TEST_BUDGET_SECONDS"
"""Not ``FORECASTER_*``: the settings read every such variable as a config key, so a test that
loads a config would fail on it - a kill the mutant did not earn."""
FUZZ = "tests/faults/test_api_fuzz.py"  # the only tests that need the schemathesis plugin


def mutated_lines(copy: Path, modules: list[str]) -> tuple[str, set[int]] | None:
    """The scoped module that differs from its pristine copy, and its changed (old) lines."""
    for module in modules:
        now = (copy / module).read_text().splitlines()
        before = (copy / PRISTINE / module).read_text().splitlines()
        if now == before:
            continue
        lines: set[int] = set()
        matcher = difflib.SequenceMatcher(a=before, b=now, autojunk=False)
        for tag, start, end, _, _ in matcher.get_opcodes():
            if tag != "equal":
                lines.update(range(start + 1, max(end, start + 1) + 1))
        return module, lines
    return None


def chosen_tests(tests_map: dict[str, object], module: str, lines: set[int]) -> list[str]:
    """Covering tests, the module's package's first, fastest first; the curated fallback when no
    in-process test covers."""
    by_line: dict[str, list[str]] = tests_map["lines"].get(module, {})  # type: ignore[attr-defined]
    seconds: dict[str, float] = tests_map["seconds"]  # type: ignore[assignment]
    found = {test for line in lines for test in by_line.get(str(line), ())}
    if not found:
        found = set(tests_map["fallback"].get(module, ()))  # type: ignore[attr-defined]
    found -= set(tests_map.get("failing", ()))  # type: ignore[arg-type]  # a kill nobody earned
    # the module's own package's tests first (forecaster/actuators -> tests/actuators: the
    # tests written about it), then the rest; fastest first within each
    own = "tests/" + module.split("/")[1] + "/"
    return sorted(found, key=lambda test: (not test.startswith(own), seconds.get(test, 60.0), test))


def within(tests: list[str], seconds: dict[str, float], budget: float) -> list[str]:
    """The fastest of ``tests`` (already fastest first) that fit in ``budget`` seconds, at least
    one; all of them when ``budget`` is 0 (``run --confirm``)."""
    if budget <= 0:
        return tests
    chosen: list[str] = []
    spent = 0.0
    for test in tests:
        spent += seconds.get(test, 60.0)
        if chosen and spent > budget:
            break
        chosen.append(test)
    return chosen


def main() -> int:
    copy = Path.cwd()
    tests_map = json.loads((copy / TESTS_MAP).read_text())
    found = mutated_lines(copy, sorted(tests_map["modules"]))
    if found is None:
        print("select-tests: no scoped module differs from its pristine copy")
        return 0
    module, lines = found
    covering = chosen_tests(tests_map, module, lines)
    budget = float(os.environ.get(BUDGET_VARIABLE, DEFAULT_BUDGET_SECONDS))
    tests = within(covering, tests_map["seconds"], budget)  # type: ignore[arg-type]
    print(
        f"select-tests: {module} lines {sorted(lines)}: {len(tests)} of {len(covering)} tests",
        flush=True,
    )
    if not tests:
        return 0
    plugins = ["-p", "no:cacheprovider"]
    if not any(test.startswith(FUZZ) for test in tests):
        plugins += ["-p", "no:schemathesis"]  # about 2 s of every run, for one test file
    env = {k: v for k, v in os.environ.items() if k != BUDGET_VARIABLE}
    limit = (MUTANT_TIMEOUT_SECONDS if budget > 0 else CONFIRM_TIMEOUT_SECONDS) - OWN_MARGIN_SECONDS
    returncode = run_pytest(
        [sys.executable, "-m", "pytest", "-q", "-x", *plugins, *tests], copy, env, limit
    )
    if returncode == PYTEST_NO_TESTS:
        return 0
    if returncode == PYTEST_USAGE_ERROR:
        print("select-tests: SELECTION-ERROR pytest could not take the selection")
        return 0  # a survivor to look at, not a kill nobody earned
    return returncode


def run_pytest(command: list[str], copy: Path, env: dict[str, str], limit: float) -> int:
    """Run ``command`` in its own process group, named in ``copy/TEST_GROUP`` while it runs so
    that a stopped mutation run can kill it (``run.stop_tests``); killed after ``limit`` seconds.

    A timeout is a kill, as cosmic-ray counts its own: a mutant that makes a loop endless."""
    process = subprocess.Popen(command, cwd=copy, env=env, start_new_session=True)
    group = copy / TEST_GROUP
    group.write_text(str(process.pid))
    try:
        return process.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        print(f"select-tests: TIMEOUT after {limit:.0f} s, counted as killed", flush=True)
        return 1
    finally:
        kill_group(process.pid)  # what the tests started and left, or all of it on a timeout
        process.wait()
        group.unlink(missing_ok=True)


def kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(group, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
