"""``simulation.workers.run_each``: results in the tasks' order whatever order they finish in,
every task reported done once, a task's error raised to the caller, what a task logs in the
caller's log (and not what the caller quieted) - in worker processes as in the calling one."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from forecaster.errors import ModelError
from forecaster.simulation.workers import Interrupted, run_each, usable_cpus
from forecaster.testing.processes import running


def square(task: tuple[int, Path, bool]) -> int:
    """With ``wait``, task 0 waits for the last task's mark (on two workers it finishes last)."""
    n, marks, wait = task
    (marks / str(n)).touch()
    if n == 0 and wait:
        deadline = time.monotonic() + 30
        while not (marks / "3").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    return n * n


def logs(n: int) -> int:
    logging.getLogger("forecaster.reconcile.loop").warning("task %d handed off", n)
    logging.getLogger("forecaster.reconcile.loop").info("task %d: a per-tick line", n)
    return n


def fails_on_three(n: int) -> int:
    if n == 3:
        raise ModelError("task 3 failed")
    return n


@pytest.mark.parametrize("workers", [1, 2])
def test_results_keep_the_tasks_order_and_each_is_reported(workers: int, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    tasks = [(n, tmp_path, workers > 1) for n in range(4)]
    results = run_each(square, tasks, workers=workers, done=lambda i, k: seen.append((i, k)))
    assert results == [0, 1, 4, 9]
    assert sorted(i for i, _ in seen) == [0, 1, 2, 3]
    assert [k for _, k in seen] == [1, 2, 3, 4]  # a running count, as tasks finish
    if workers == 2:
        assert seen[-1][0] == 0  # ... in the order they finish, not the order given


@pytest.mark.parametrize("workers", [1, 2])
def test_a_task_error_reaches_the_caller(workers: int) -> None:
    with pytest.raises(ModelError, match="task 3 failed"):
        run_each(fails_on_three, list(range(6)), workers=workers)


@pytest.mark.parametrize("workers", [1, 2])
def test_what_a_task_logs_reaches_the_callers_log(
    workers: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        run_each(logs, [1, 2], workers=workers)
    found = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    for n in (1, 2):
        assert ("forecaster.reconcile.loop", logging.WARNING, f"task {n} handed off") in found


@pytest.mark.parametrize("workers", [1, 2])
def test_a_logger_the_caller_quieted_stays_quiet_in_the_workers(
    workers: int, caplog: pytest.LogCaptureFixture
) -> None:
    """``replay`` quiets the loop's per-tick line; a worker forwarding it wrote hundreds of MB."""
    loop = logging.getLogger("forecaster.reconcile.loop")
    with caplog.at_level(logging.INFO):
        loop.setLevel(logging.WARNING)
        try:
            run_each(logs, [1, 2], workers=workers)
        finally:
            loop.setLevel(logging.NOTSET)
    lines = [r.getMessage() for r in caplog.records if r.name == loop.name]
    assert sorted(lines) == ["task 1 handed off", "task 2 handed off"]


def test_usable_cpus_is_at_least_one() -> None:
    assert usable_cpus() >= 1


def sleeps(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_ctrl_c_stops_the_pools_workers_and_leaves_the_callers_own_children_alone() -> None:
    """Interrupted (Ctrl-C while it waits, here raised by the progress callback after the first
    result): what finished is kept, the workers are stopped - and a process the caller started
    before, not one of the pool's, still runs. The pool's manager thread has ended by then: left
    running, it races the interpreter's exit to close the pipe exit writes to, and the replay CLI
    ended its Ctrl-C with an ``OSError: Bad file descriptor`` traceback (CI caught it once)."""
    import multiprocessing
    from concurrent.futures.process import _ExecutorManagerThread

    mine = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(60,))
    mine.start()

    def interrupt(index: int, count: int) -> None:
        raise KeyboardInterrupt

    try:
        with pytest.raises(Interrupted) as stopped:
            run_each(sleeps, [0.0, 30.0, 30.0], workers=2, done=interrupt)
        assert list(stopped.value.finished.values()) == [0.0]
        managers = [t for t in threading.enumerate() if isinstance(t, _ExecutorManagerThread)]
        assert not managers, "the pool's manager thread outlived the interrupt"
        mine.join(timeout=2)  # a terminated process needs a moment to be reaped (CI caught that)
        assert mine.exitcode is None, "the caller's own child was terminated"
    finally:
        mine.terminate()
        mine.join()


def next_while_small(index: int, result: int) -> list[int]:
    """``follow``: a task whose square is under 10 is followed by the next number up."""
    return [int(result**0.5) + 1] if result < 10 else []


def plain_square(n: int) -> int:
    return n * n


@pytest.mark.parametrize("workers", [1, 2])
def test_a_finished_task_may_add_the_next_and_its_result_comes_after_those_given(
    workers: int,
) -> None:
    """The frontier's floors follow one another: a task ``follow`` adds runs once the one before
    it finished, while the others keep the workers busy; its result is indexed after the tasks
    given, in the order added."""
    seen: list[int] = []
    results = run_each(
        plain_square,
        [1, 5],
        workers=workers,
        follow=next_while_small,
        done=lambda i, k: seen.append(i),
    )
    # 1 -> 2 -> 3 -> 4 (16: no more); 5 (25): none
    assert results == [1, 25, 4, 9, 16]
    assert sorted(seen) == [0, 1, 2, 3, 4]


def chain_of_short_ones(index: int, result: float) -> list[float]:
    """``follow``: a 0.2 s task is followed by a 0.21 s one, and that by a 0.22 s one."""
    return [round(result + 0.01, 2)] if 0.2 <= result < 0.22 else []


def short_first(seconds: float) -> int:
    """``rank``: the 1 s tasks after the others."""
    return 1 if seconds == 1.0 else 0


def test_tasks_start_by_rank_and_so_do_those_follow_adds() -> None:
    """The frontier's long runs and the links of its floor chains start before the short runs
    given ahead of them, so the short ones fill the workers at the end instead of a chain's
    last link running alone."""
    seen: list[int] = []
    run_each(
        sleeps,
        [1.0, 1.0, 1.0, 0.2, 3.0],
        workers=2,
        follow=chain_of_short_ones,
        done=lambda i, k: seen.append(i),
        rank=short_first,
    )
    chain, fillers = [3, 5, 6], [0, 1, 2]
    assert max(seen.index(i) for i in chain) < min(seen.index(i) for i in fillers), seen


CALLER = """
import sys
from forecaster.simulation.workers import run_each
from tests.simulation.test_workers import writes_pid_and_sleeps
run_each(writes_pid_and_sleeps, [sys.argv[1] + "/a", sys.argv[1] + "/b"], workers=2)
"""


def writes_pid_and_sleeps(path: str) -> None:
    Path(path).write_text(str(os.getpid()))
    time.sleep(120)


def test_workers_end_soon_after_their_caller_is_killed(tmp_path: Path) -> None:
    """A caller killed outright runs no cleanup: its workers must notice on their own, not
    replay on for minutes."""
    caller = subprocess.Popen([sys.executable, "-c", CALLER, str(tmp_path)])
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / n).exists() and (tmp_path / n).read_text() for n in "ab"):
            assert time.monotonic() < deadline, "the workers never started"
            time.sleep(0.1)
        workers = [int((tmp_path / n).read_text()) for n in "ab"]
    finally:
        caller.kill()
        caller.wait()
    deadline = time.monotonic() + 10
    while any(running(pid) for pid in workers):
        assert time.monotonic() < deadline, "a worker outlived its killed caller by 10 s"
        time.sleep(0.1)
