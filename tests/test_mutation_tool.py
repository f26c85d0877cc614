"""The mutation tool's own choices (``bench/mutation``): which lines a mutant changed, which
tests it gets, which mutants are not worth a run. A wrong choice here would report survivors
nobody could kill, or - worse - kills no test earned."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.mutation.equivalent import EQUIVALENT
from bench.mutation.paths import PRISTINE, TEST_GROUP
from bench.mutation.report import stale
from bench.mutation.run import finished
from bench.mutation.scope import SCOPE, kept
from bench.mutation.select_tests import (
    BUDGET_VARIABLE,
    chosen_tests,
    mutated_lines,
    run_pytest,
    within,
)
from bench.mutation.skips import logging_lines, scoped
from forecaster.testing.processes import running

MODULE = "forecaster/core/budget.py"
OWN = "tests/core/test_budget.py::test_x"  # the module's own package's tests come first


def _copy(tmp_path: Path, before: str, after: str) -> Path:
    for root, text in ((tmp_path / PRISTINE, before), (tmp_path, after)):
        (root / MODULE).parent.mkdir(parents=True, exist_ok=True)
        (root / MODULE).write_text(text)
    return tmp_path


def test_the_mutated_lines_are_found_in_the_pristine_numbering(tmp_path: Path) -> None:
    before = "a = 1\nif a < 2:\n    b = [\n        1,\n        2,\n    ]\n"
    after = "a = 1\nif a <= 2:\n    b = []\n"  # a shifted comparison, a loop made empty
    copy = _copy(tmp_path, before, after)
    assert mutated_lines(copy, [MODULE]) == (MODULE, {2, 3, 4, 5, 6})
    (copy / MODULE).write_text(before)
    assert mutated_lines(copy, [MODULE]) is None


def test_a_mutant_gets_its_packages_tests_first_then_the_fastest_else_the_curated_ones() -> None:
    tests_map: dict[str, object] = {
        "lines": {MODULE: {"3": ["t::slow", "t::fast", OWN], "4": ["t::fast", "t::other"]}},
        "seconds": {"t::slow": 9.0, "t::fast": 0.1, "t::other": 1.0, OWN: 5.0},
        "fallback": {MODULE: ["t::curated"]},
        "failing": [],
    }
    assert chosen_tests(tests_map, MODULE, {3, 4}) == [OWN, "t::fast", "t::other", "t::slow"]
    assert chosen_tests(tests_map, MODULE, {40}) == ["t::curated"]
    tests_map["failing"] = ["t::other"]  # fails unmutated in the copy: its failure proves nothing
    assert chosen_tests(tests_map, MODULE, {3, 4}) == [OWN, "t::fast", "t::slow"]


def test_a_mutant_runs_the_fastest_tests_within_the_budget_all_of_them_to_confirm() -> None:
    seconds = {"a": 1.0, "b": 5.0, "c": 40.0}
    assert within(["a", "b", "c"], seconds, 30) == ["a", "b"]
    assert within(["c", "d"], seconds, 30) == ["c"]  # at least one, however slow
    assert within(["a", "b", "c"], seconds, 0) == ["a", "b", "c"]


def test_the_budget_variable_is_not_read_as_config_by_the_tests_it_runs() -> None:
    """``FORECASTER_*`` variables are config keys: one leaked into the tests' environment made
    every test that loads a config fail - kills the mutants did not earn."""
    assert not BUDGET_VARIABLE.startswith("FORECASTER_")


def test_log_lines_out_of_scope_functions_and_noisy_operators_are_skipped(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f(x):\n    log.info(\n        'x %d', x + 1\n    )\n    return x + 1\n")
    assert logging_lines(module) == {2, 3, 4}
    assert scoped("f", {"f"}) and not scoped("g", {"f"}) and not scoped(None, {"f"})
    assert kept("core/ReplaceComparisonOperator_Lt_LtE") and kept("core/AddNot")
    assert not kept("core/ReplaceBinaryOperator_Add_BitXor") and not kept("core/VariableReplacer")


def test_every_scoped_function_exists() -> None:
    """A function renamed in the code would silently fall out of the tool's scope."""
    import ast

    root = Path(__file__).resolve().parent.parent
    for module, functions in SCOPE.items():
        defined = {
            node.name
            for node in ast.walk(ast.parse((root / module).read_text()))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        assert set(functions) <= defined, (module, set(functions) - defined)


def test_drop_call_drops_calls_made_for_their_effect_only() -> None:
    from cosmic_ray.mutating import mutate_code

    from bench.mutation.operators import DropCall

    source = (
        "def f(job):\n    check(job)  # why\n    client.delete(job)\n"
        "    x = g(1)\n    return h(x)\n"
    )
    mutants = [mutate_code(source, DropCall(), occurrence) for occurrence in range(3)]
    assert mutants[0] == source.replace("check(job)", "None")
    assert mutants[1] == source.replace("client.delete(job)", "None")
    assert mutants[2] is None  # an assignment's or a return's call is never dropped


def test_a_signatures_keyword_only_marker_is_equivalent_a_multiplication_is_not() -> None:
    from bench.mutation.equivalent import reason_for

    mul = "core/ReplaceBinaryOperator_Mul_Div"
    assert reason_for(MODULE, mul, "def f(kube: Kube, *, namespace: str) -> bool:")
    assert reason_for(MODULE, mul, "    *,")
    assert reason_for(MODULE, mul, "held = gpus * hours") is None


def test_an_equivalent_listing_no_surviving_mutant_meets_is_reported_stale() -> None:
    listing = EQUIVALENT[0]
    met = {
        "module": listing.module,
        "operator": listing.operator,
        "source": listing.line,
        "outcome": "equivalent",
        "diff": f"--- a\n+++ b\n-{listing.line}\n+{listing.line.replace(', 0)', ', -1)', 1)}",
    }
    others = [e for e in EQUIVALENT[1:] if e.module == listing.module]
    assert listing not in stale([met], done={listing.module})
    assert others and set(others) <= set(stale([met], done={listing.module}))
    assert stale([], done=set()) == []  # an unfinished module's listings are not judged yet


SLEEPER = "import time; time.sleep(120)"


def _spawn_in_new_session(marker: str) -> str:
    """Python source that starts a sleeper in its own session, writes its pid to ``marker`` and
    sleeps: a test command (cosmic-ray starts one that way) or the tests it runs."""
    return (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', {SLEEPER!r}], start_new_session=True)\n"
        f"open({marker!r}, 'w').write(str(p.pid))\n"
        "time.sleep(120)\n"
    )


def _gone(pid: int) -> bool:
    """Not running within 10 s."""
    deadline = time.monotonic() + 10
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _written(path: Path) -> int:
    deadline = time.monotonic() + 30
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.05)
    return int(path.read_text())


def test_a_mutants_tests_stop_at_their_limit_and_leave_nothing_running(tmp_path: Path) -> None:
    """An endless mutant ran its pytest for 33 minutes after the tool was stopped: the tests are
    now killed at their own limit, with everything they started, counted as a kill."""
    started = time.monotonic()
    command = [sys.executable, "-c", _spawn_in_new_session(str(tmp_path / "child"))]
    command[-1] = command[-1].replace("start_new_session=True", "start_new_session=False")
    assert run_pytest(command, tmp_path, dict(os.environ), limit=3) == 1
    assert time.monotonic() - started < 20
    assert _gone(_written(tmp_path / "child"))
    assert not (tmp_path / TEST_GROUP).exists()


def test_a_stopped_run_kills_cosmic_ray_and_the_mutants_tests_in_their_own_session(
    tmp_path: Path,
) -> None:
    """cosmic-ray starts the test command in a new session, so killing cosmic-ray's process
    group alone leaves the tests running; a stop (Ctrl-C, the time box) kills both."""
    cosmic_ray = subprocess.Popen(
        [sys.executable, "-c", _spawn_in_new_session(str(tmp_path / TEST_GROUP))],
        start_new_session=True,
    )
    tests = _written(tmp_path / TEST_GROUP)
    stopped = threading.Event()
    stopped.set()
    assert not finished(cosmic_ray, tmp_path, time.monotonic() + 60, stopped)
    assert cosmic_ray.returncode is not None
    assert _gone(tests)
    assert not (tmp_path / TEST_GROUP).exists()
