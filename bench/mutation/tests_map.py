"""Which tests execute which line of the scoped modules, and how long each test takes.

One run of the whole suite under coverage with a context per test (pytest-cov's
``--cov-context=test``), in a copy of the commit under judgement, gives every line of the scoped
modules the tests that run it; the JUnit report gives each test's time, so a mutant's tests run
fastest first and a kill comes early. Lines only a subprocess reaches get the curated mutation
check's tests for their file instead.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import coverage

from bench.mutation.paths import ROOT
from bench.mutation.scope import SCOPE


def curated_tests() -> dict[str, list[str]]:
    """The curated mutation check's tests, by the file each mutation breaks."""
    spec = importlib.util.spec_from_file_location(
        "mutation_check", ROOT / "scripts" / "mutation_check.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutation_check"] = module
    spec.loader.exec_module(module)
    found: dict[str, set[str]] = defaultdict(set)
    for mutation in module.MUTATIONS:
        found[mutation.path].update(mutation.tests)
    return {path: sorted(tests) for path, tests in found.items()}


def _cases(junit: Path) -> tuple[dict[str, float], list[str]]:
    """Each test's time, and the tests that failed in the unmutated copy (never a mutant's)."""
    seconds: dict[str, float] = {}
    failing: list[str] = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        # classname "tests.core.test_budget" (+ ".TestClass"), name "test_x[param]"
        parts = case.get("classname", "").split(".")
        path_parts = parts
        klass = ""
        if parts and parts[-1][:1].isupper():
            path_parts, klass = parts[:-1], parts[-1]
        node = (
            "/".join(path_parts) + ".py::" + (f"{klass}::" if klass else "") + case.get("name", "")
        )
        seconds[node] = float(case.get("time", "0") or 0)
        if case.find("failure") is not None or case.find("error") is not None:
            failing.append(node)
    return seconds, sorted(failing)


def build(copy: Path, test_files: list[str] | None = None) -> dict[str, object]:
    """Run the suite (or ``test_files`` of it) under coverage in ``copy``; return the map."""
    data_file = copy / ".coverage-map"
    junit = copy / ".junit.xml"
    modules = [path.removesuffix(".py").replace("/", ".") for path in SCOPE]
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-n",
        str(os.cpu_count() or 1),
        "-p",
        "no:cacheprovider",
        "--cov-context=test",
        "--cov-report=",
        *(f"--cov={module}" for module in modules),
        f"--junitxml={junit}",
        *(test_files or ()),
    ]
    env = dict(os.environ, COVERAGE_FILE=str(data_file), PYTHONPATH=str(copy))
    result = subprocess.run(command, cwd=copy, env=env, check=False)
    if result.returncode not in (0, 1, 5):  # 5: no tests (every changed file deleted)
        raise SystemExit(f"mutation: the coverage run of the suite failed ({result.returncode})")
    data = coverage.CoverageData(str(data_file))
    data.read()  # an empty map if no test ran
    lines: dict[str, dict[str, list[str]]] = {}
    for measured in data.measured_files():
        module = str(Path(measured).resolve().relative_to(copy.resolve()))
        by_line = data.contexts_by_lineno(measured)
        lines[module] = {
            str(line): sorted({c.split("|")[0] for c in contexts if c})
            for line, contexts in by_line.items()
            if any(contexts)
        }
    seconds, failing = _cases(junit)
    return {
        "modules": sorted(SCOPE),
        "lines": lines,
        "seconds": seconds,
        "failing": failing,
        "fallback": {path: tests for path, tests in curated_tests().items() if path in SCOPE},
    }


def merged(old: dict[str, object], new: dict[str, object], files: list[str]) -> dict[str, object]:
    """``old`` with everything from the test ``files`` replaced by ``new`` (their fresh run)."""

    def kept(test: str) -> bool:
        return test.split("::", maxsplit=1)[0] not in files

    lines: dict[str, dict[str, list[str]]] = {}
    for source in (old["lines"], new["lines"]):
        for module, by_line in source.items():  # type: ignore[attr-defined]
            for line, tests in by_line.items():
                known = lines.setdefault(module, {}).setdefault(line, [])
                known.extend(t for t in tests if source is new["lines"] or kept(t))
    seconds = {t: s for t, s in old["seconds"].items() if kept(t)}  # type: ignore[attr-defined]
    seconds.update(new["seconds"])  # type: ignore[arg-type]
    failing = [t for t in old["failing"] if kept(t)] + list(new["failing"])  # type: ignore[attr-defined]
    return {**old, "lines": lines, "seconds": seconds, "failing": sorted(set(failing))}
