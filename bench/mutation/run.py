"""Mutation testing of the safety functions with cosmic-ray: time-boxed, resumable, published.

The curated list (``scripts/mutation_check.py``) breaks the lines its authors thought of; this
lets a tool break every line of the functions that decide money, expiry, leadership, ownership
and the kill switch (``bench/mutation/scope.py``) and asks the suite to notice.

How a run goes, all on the commit checked out (HEAD; a run judges a commit):

1. a coverage map (which tests run which line; ``tests_map``), rebuilt when the source or the
   tests changed;
2. one cosmic-ray session per scoped module in ``.mutation/sessions``, kept while the module is
   unchanged; mutants outside the scoped functions, in logging calls or of operators not worth
   a run are marked skipped; survivors are tried again when the tests changed (new tests may
   kill them);
3. ``cosmic-ray exec`` over the pending mutants, one working copy per core, until done or the
   time box ends (killed mid-mutant, the mutant stays pending for the next run); each mutant
   gets the fastest of its covering tests within a time budget, and ``--confirm`` runs every
   survivor not listed as equivalent against all of them (a slow loop test may still kill it);
4. the result by module and function - mutants, killed, equivalent (``equivalent.py``, each
   with its reason), survived, pending - printed and written to ``docs/results/mutation.json``.

Run: ``.venv/bin/python -m bench.mutation.run [--minutes 60] [--only notice]`` (``--report``
only reports; ``--only`` keeps the modules whose path holds that part).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult

from bench.mutation.paths import COPIED, PRISTINE, RESULT, ROOT, STATE, TEST_GROUP, TESTS_MAP
from bench.mutation.report import judge, publish
from bench.mutation.scope import SCOPE, SHARDS, kept
from bench.mutation.select_tests import (
    BUDGET_VARIABLE,
    CONFIRM_TIMEOUT_SECONDS,
    MUTANT_TIMEOUT_SECONDS,
    kill_group,
)
from bench.mutation.skips import logging_lines, scoped
from bench.mutation.tests_map import build, merged

SESSIONS = STATE / "sessions"
POLL_SECONDS = 1.0  # how soon a stopped run (Ctrl-C, the time box) kills what it started
COSMIC_RAY = (sys.executable, "-m", "bench.mutation.cli")  # with our DropCall operator


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def export(dest: Path) -> Path:
    """A copy of HEAD's files at ``dest``, with the scoped modules' pristine copies beside."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", "HEAD", *COPIED], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    for module in SCOPE:
        (dest / PRISTINE / module).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(dest / module, dest / PRISTINE / module)
    return dest


def session_of(module: str) -> Path:
    return SESSIONS / (module.replace("/", "__") + ".sqlite")


def config_of(module: str, timeout: int = MUTANT_TIMEOUT_SECONDS) -> Path:
    config = SESSIONS / (module.replace("/", "__") + ".toml")
    config.write_text(
        "[cosmic-ray]\n"
        f'module-path = "{module}"\n'
        f"timeout = {timeout}.0\n"
        "excluded-modules = []\n"
        f'test-command = "{sys.executable} -m bench.mutation.select_tests"\n'
        '[cosmic-ray.distributor]\nname = "local"\n'
    )
    return config


def _keys(module: str) -> dict[str, str]:
    path = session_of(module).with_suffix(".keys.json")
    return json.loads(path.read_text()) if path.exists() else {}


def _save_keys(module: str, keys: dict[str, str]) -> None:
    session_of(module).with_suffix(".keys.json").write_text(json.dumps(keys))


def tests_map(commit: str) -> tuple[dict[str, object], str]:
    """The coverage map for ``commit``, and its key (the source and the tests' trees).

    Built once per source tree: when only test files (``tests/**/test_*.py``) changed since it
    was built, only those are run again and merged in (what killing survivors changes)."""
    path = STATE / "tests-map.json"
    source = git("rev-parse", f"{commit}:forecaster")
    tests = git("rev-parse", f"{commit}:tests")
    cached = json.loads(path.read_text()) if path.exists() else {}
    if (cached.get("source"), cached.get("tests")) == (source, tests):
        return cached, f"{source}-{tests}"
    started = time.monotonic()
    copy = export(STATE / "map-copy")
    changed = (
        git("diff", "--name-only", cached["commit"], commit, "--", "tests").split()
        if cached.get("source") == source
        else None
    )
    if changed is not None and all(_is_test_file(name) for name in changed):
        present = [name for name in changed if (copy / name).exists()]
        print(f"mutation: coverage of {len(changed)} changed test files, merged", flush=True)
        built = merged(cached, build(copy, present) if present else cached, changed)
    else:
        print("mutation: building the coverage map (the suite under coverage, once)", flush=True)
        built = build(copy)
    built.update(source=source, tests=tests, commit=commit)
    built["built_seconds"] = round(time.monotonic() - started)
    path.write_text(json.dumps(built))
    print(f"mutation: coverage map ready in {built['built_seconds']} s", flush=True)
    return built, f"{source}-{tests}"


def _is_test_file(name: str) -> bool:
    return name.startswith("tests/") and Path(name).name.startswith("test_")


def prepare(module: str, copy: Path, map_key: str) -> None:
    """The module's session: made (and filtered) for its source, survivors retried on new tests."""
    session = session_of(module)
    keys = _keys(module)
    # the module, and what decides its mutants (the scope, the operators)
    source_key = "-".join(
        git("rev-parse", f"HEAD:{path}")
        for path in (module, "bench/mutation/scope.py", "bench/mutation/operators.py")
    )
    if keys.get("source") != source_key or not session.exists():
        session.unlink(missing_ok=True)
        subprocess.run(
            [*COSMIC_RAY, "init", str(config_of(module)), str(session)],
            cwd=copy,
            check=True,
        )
        _skip_out_of_scope(module, copy, session)
        keys = {"source": source_key, "map": map_key}
    elif keys.get("map") != map_key:
        _retry_survivors(session)
        keys["map"] = map_key
    _save_keys(module, keys)


def _skip_out_of_scope(module: str, copy: Path, session: Path) -> None:
    in_logging = logging_lines(copy / module)
    functions = set(SCOPE[module])
    with use_db(str(session), WorkDB.Mode.open) as db:
        skipped = []
        for item in db.pending_work_items:
            mutation = item.mutations[0]
            reason = None
            if not kept(mutation.operator_name):
                reason = "operator not in the kept set"
            elif not scoped(mutation.definition_name, functions):
                reason = f"outside the scoped functions ({mutation.definition_name})"
            elif mutation.start_pos[0] in in_logging:
                reason = "inside a logging call"
            if reason is not None:
                skipped.append((item.job_id, reason))
        for job_id, reason in skipped:
            db.set_result(job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output=reason))


def _retry_survivors(session: Path) -> None:
    with sqlite3.connect(session) as db:
        db.execute("DELETE FROM work_results WHERE test_outcome = ?", (TestOutcome.SURVIVED.name,))


def _confirm_survivors(module: str, session: Path, commit: str) -> None:
    """Survivors not listed as equivalent, to run again against every covering test (an
    equivalent one would only spend minutes proving again that nothing can kill it)."""
    _, listed = judge(module, session, commit)
    retried = [(m["job_id"],) for m in listed if m["outcome"] == "survived"]
    with sqlite3.connect(session) as db:
        db.executemany("DELETE FROM work_results WHERE job_id = ?", retried)


def pending(module: str) -> int:
    with use_db(str(session_of(module)), WorkDB.Mode.open) as db:
        return db.num_work_items - db.num_results


def _shards(modules: list[str]) -> list[list[str]]:
    """Modules dealt to the shards, largest first, each to the lightest shard so far."""
    shards: list[list[str]] = [[] for _ in range(SHARDS)]
    loads = [0] * SHARDS
    left = {module: pending(module) for module in modules}  # one read of each session
    for module in sorted(modules, key=left.__getitem__, reverse=True):
        lightest = loads.index(min(loads))
        shards[lightest].append(module)
        loads[lightest] += left[module]
    return shards


def _execute(
    modules: list[str], copy: Path, deadline: float, stopped: threading.Event, *, confirm: bool
) -> None:
    env = dict(os.environ, PYTHONPATH=str(copy))
    if confirm:
        env[BUDGET_VARIABLE] = "0"
    timeout = CONFIRM_TIMEOUT_SECONDS if confirm else MUTANT_TIMEOUT_SECONDS
    for module in modules:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or stopped.is_set():
            return
        config = config_of(module, timeout)
        process = subprocess.Popen(
            [*COSMIC_RAY, "exec", str(config), str(session_of(module))],
            cwd=copy,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        if not finished(process, copy, deadline, stopped):
            stopped.set()
            return
        print(f"mutation: {module} done ({pending(module)} pending)", flush=True)


def finished(
    process: subprocess.Popen[bytes], copy: Path, deadline: float, stopped: threading.Event
) -> bool:
    """Wait for a ``cosmic-ray exec``; at the deadline or when stopped, kill it and the mutant's
    tests (their own process group: cosmic-ray starts the test command in a new session, so
    killing cosmic-ray's group alone left an endless mutant's pytest running) and say so."""
    while not stopped.is_set() and time.monotonic() < deadline:
        try:
            process.wait(timeout=POLL_SECONDS)
            return True
        except subprocess.TimeoutExpired:
            continue
    kill_group(process.pid)
    process.wait()
    stop_tests(copy)
    return False


def stop_tests(copy: Path) -> None:
    """Kill the mutant's tests running in ``copy``, if any (the group ``select_tests`` named)."""
    try:
        group = int((copy / TEST_GROUP).read_text())
    except (FileNotFoundError, ValueError):
        return
    kill_group(group)
    (copy / TEST_GROUP).unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="the time box (default 60)")
    parser.add_argument("--report", action="store_true", help="only report what the sessions hold")
    parser.add_argument(
        "--confirm",
        action="store_true",
        help="run every survivor against all its covering tests, not only the fastest",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PART",
        help="run (and report) only the scoped modules whose path contains PART (repeatable)",
    )
    args = parser.parse_args(argv)
    chosen = [m for m in SCOPE if not args.only or any(part in m for part in args.only)]
    judged = STATE / "judged-commit"  # what the sessions judge, whatever is committed meanwhile
    # a part's run is published apart (the whole scope's result stays that of its own run)
    result = RESULT.with_name(f"mutation-{'-'.join(args.only)}.json") if args.only else RESULT
    spent = _spent(result.stem)
    if not args.report:
        if git("status", "--porcelain", "--untracked-files=no", *COPIED):
            print("mutation: note: uncommitted changes are not judged (a run judges HEAD)")
        started = time.monotonic()
        deadline = started + args.minutes * 60
        SESSIONS.mkdir(parents=True, exist_ok=True)
        judged.write_text(git("rev-parse", "HEAD"))
        built, map_key = tests_map(judged.read_text().strip())
        copies = [export(STATE / f"work-{shard}") for shard in range(SHARDS)]
        for copy in copies:
            (copy / TESTS_MAP).write_text(json.dumps(built))
        for module in chosen:
            prepare(module, copies[0], map_key)
            if args.confirm:
                _confirm_survivors(module, session_of(module), judged.read_text().strip())
        stopped = threading.Event()
        workers = [
            threading.Thread(
                target=_execute,
                args=(modules, copy, deadline, stopped),
                kwargs={"confirm": args.confirm},
            )
            for modules, copy in zip(_shards(chosen), copies, strict=True)
        ]
        for worker in workers:
            worker.start()
        try:
            for worker in workers:
                worker.join()
        except KeyboardInterrupt:
            stopped.set()  # each worker kills its mutant and the mutant's tests within a second
            for worker in workers:
                worker.join()
            print("mutation: interrupted; the mutants not finished stay pending", flush=True)
            return 130
        took = time.monotonic() - started
        print(f"mutation: ran {took:.0f} s of a {args.minutes:.0f}-minute box")
        spent = _spent(result.stem, add=took)
    sessions = {module: session_of(module) for module in chosen}
    survivors = publish(sessions, judged.read_text().strip(), result, seconds=spent)
    return 1 if survivors else 0


def _spent(label: str, *, add: float = 0.0) -> float:
    """Seconds the runs of ``label`` (a scope's result) took so far, ``add`` included: a run
    resumes where the last stopped, so its result took all of them."""
    path = STATE / "run-seconds.json"
    spent = json.loads(path.read_text()) if path.exists() else {}
    spent[label] = round(spent.get(label, 0.0) + add)
    if add:
        path.write_text(json.dumps(spent))
    return float(spent[label])


if __name__ == "__main__":
    sys.exit(main())
