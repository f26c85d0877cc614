"""Replays on several cores at once.

Each replay is independent of the others and deterministic, so running them in worker processes
gives the same figures, N at a time: the frontier's replays take about half the time on 2 cores.
Processes, not threads: a replay is pure Python and numpy under the GIL. They are *spawned*, not
forked, so a worker never inherits a lock some thread of the parent held (the daemon's and the
training job's clients run threads). What a task carries must pickle: module-level functions
(``app.replay_policies.replay_policy``), dataclasses and arrays. What a worker logs goes through a
queue to the calling process's handlers, at its root level, so it reads as the calling
process's own log (a spawned process has no logging set up).
"""

from __future__ import annotations

import heapq
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from logging.handlers import QueueHandler, QueueListener
from multiprocessing.queues import Queue
from typing import Any, TypeVar

from threadpoolctl import threadpool_limits

Task = TypeVar("Task")
Result = TypeVar("Result")


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, not the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during ``run_each``: the results of the tasks that finished, by task index."""

    def __init__(self, finished: dict[int, Any]) -> None:
        super().__init__()
        self.finished = finished


def run_each(
    run: Callable[[Task], Result],
    tasks: Sequence[Task],
    *,
    workers: int,
    done: Callable[[int, int], None] | None = None,
    follow: Callable[[int, Result], Sequence[Task]] | None = None,
    rank: Callable[[Task], int] | None = None,
) -> list[Result]:
    """``run`` over ``tasks``, results in the tasks' order; in up to ``workers`` processes when
    more than one. ``done(index, finished)`` after each task, as tasks finish. ``follow(index,
    result)``, called in this process as each task finishes, returns tasks to run next (indexed
    after those given, in the order returned): a sweep that decides from one result whether
    the next run is worth it keeps every worker busy meanwhile. In processes, the tasks not
    started yet start by ``rank`` (lowest first; then by index): the long ones and the links of
    a chain first, so the short ones fill the workers at the end instead of a long one running
    alone. The first error raised by a task is raised here, and tasks not started yet are
    never started. Ctrl-C raises ``Interrupted`` with what finished; the workers are stopped
    (terminated), not waited for."""
    tasks = list(tasks)

    def finish(index: int, result: Result, count: int) -> list[Task]:
        if done is not None:
            done(index, count)
        more = list(follow(index, result)) if follow is not None else []
        tasks.extend(more)
        return more

    if workers > 1 and (len(tasks) > 1 or follow is not None):
        return _in_processes(
            run,
            tasks,
            workers=workers,
            finish=finish,
            grows=follow is not None,
            rank=rank or (lambda task: 0),
        )
    finished: dict[int, Result] = {}
    try:
        for index, task in enumerate(tasks):  # ``finish`` may add to ``tasks`` as it goes
            finished[index] = run(task)
            finish(index, finished[index], index + 1)
    except KeyboardInterrupt:
        raise Interrupted(finished) from None
    return [finished[i] for i in range(len(tasks))]


def _in_processes(
    run: Callable[[Task], Result],
    tasks: list[Task],
    *,
    workers: int,
    finish: Callable[[int, Result, int], list[Task]],
    grows: bool,
    rank: Callable[[Task], int],
) -> list[Result]:
    """``run_each`` in spawned worker processes, one task per worker at a time (so the next is
    chosen by ``rank`` as one finishes): ``finish`` reports each result and returns the tasks
    it adds (appended to ``tasks``)."""
    finished: dict[int, Result] = {}
    context = multiprocessing.get_context("spawn")
    records: Queue[logging.LogRecord] = context.Queue()
    root = logging.getLogger()
    listener = QueueListener(records, *root.handlers, respect_handler_level=True)
    listener.start()
    others = set(multiprocessing.active_children())  # a caller's own children are not ours
    pool = ProcessPoolExecutor(
        max_workers=workers if grows else min(workers, len(tasks)),
        mp_context=context,
        initializer=_worker_started,
        initargs=(records, root.level, _levels()),
    )
    interrupted = False
    waiting = [(rank(task), index) for index, task in enumerate(tasks)]  # not submitted yet
    heapq.heapify(waiting)
    futures: dict[Future[Result], int] = {}

    def submit() -> None:
        while waiting and len(futures) - len(finished) < workers:
            _, index = heapq.heappop(waiting)
            futures[pool.submit(run, tasks[index])] = index

    try:
        submit()
        pending = set(futures)
        while pending:
            ended, pending = _next_done(pending)
            for future in sorted(ended, key=futures.__getitem__):
                index, result = futures[future], future.result()  # a failure stops the rest
                finished[index] = result
                more = finish(index, result, len(finished))
                for index in range(len(tasks) - len(more), len(tasks)):
                    heapq.heappush(waiting, (rank(tasks[index]), index))
            submit()
            pending = {f for f, i in futures.items() if i not in finished}
        return [finished[i] for i in range(len(tasks))]
    except KeyboardInterrupt:
        interrupted = True
        raise Interrupted(finished) from None
    finally:
        if interrupted:  # a replay runs for minutes: stop the workers rather than wait
            for child in set(multiprocessing.active_children()) - others:
                child.terminate()
        # waited for even then (quick: no workers): left closing its pipe at exit, the pool's
        # manager thread raced CPython 3.11's exit hook (an OSError traceback on Ctrl-C)
        pool.shutdown(wait=True, cancel_futures=True)
        listener.stop()


POLL_SECONDS = 0.5


def _next_done(pending: set[Future[Result]]) -> tuple[set[Future[Result]], set[Future[Result]]]:
    """``wait`` for the first to finish, with Ctrl-C raised only after it returns."""
    with _ctrl_c_as_flag() as pressed:
        ended, still = wait(pending, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
    if pressed.is_set():
        handler = signal.getsignal(signal.SIGINT)  # the caller's (the CLI quiets its log)
        if callable(handler):
            handler(signal.SIGINT, None)
        raise KeyboardInterrupt
    return ended, still


@contextmanager
def _ctrl_c_as_flag() -> Iterator[threading.Event]:
    """Ctrl-C (SIGINT) sets the flag instead of raising where it lands. Raised inside
    ``concurrent.futures.wait``, KeyboardInterrupt can leave a future's lock held (it takes
    them one by one); the pool's shutdown then waits on that lock forever (a Ctrl-C test hung
    CI for 27 minutes). Outside the main thread, where no signal is delivered, a flag never set.
    """
    pressed = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield pressed
        return
    before = signal.signal(signal.SIGINT, lambda signum, frame: pressed.set())
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, before)


def _levels() -> dict[str, int]:
    """The levels the caller set on named loggers (``replay`` quiets the loop's per-tick line):
    a spawned worker starts without them and would forward every line - hundreds of MB for one
    frontier."""
    return {
        name: logger.level
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger) and logger.level != logging.NOTSET
    }


def _worker_started(
    records: Queue[logging.LogRecord], level: int, levels: dict[str, int] | None = None
) -> None:
    """Log through ``records`` at the caller's ``level`` and named loggers' ``levels``; one BLAS
    thread per worker (the workers are the parallelism, as the CLI's own limit)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    threading.Thread(target=_exit_with, args=(os.getppid(),), daemon=True).start()
    root = logging.getLogger()
    root.handlers[:] = [QueueHandler(records)]
    root.setLevel(level)
    for name, named in (levels or {}).items():
        logging.getLogger(name).setLevel(named)
    threadpool_limits(limits=1)


PARENT_CHECK_SECONDS = 1.0


def _exit_with(parent: int) -> None:
    """End this worker once ``parent`` is gone. A caller killed outright (``kill``, the OOM
    killer: no Ctrl-C handling runs) leaves its workers to the init process, and each went on
    with its replay - minutes of a core nobody would read - before noticing the broken pipe."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(1)
