"""The mutation run's result: by module and function, mutants, killed, equivalent, survived and
pending, printed as a table and written as JSON (committed) with every survivor's diff."""

from __future__ import annotations

import json
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome

from bench.mutation.equivalent import reason_for
from bench.mutation.paths import ROOT

OUTCOMES = ("mutants", "killed", "equivalent", "survived", "pending", "error")


def _source(commit: str, module: str) -> list[str]:
    return subprocess.run(
        ["git", "show", f"{commit}:{module}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.splitlines()


def _judge(
    module: str, session: Path, commit: str
) -> tuple[dict[str, Counter[str]], list[dict[str, object]]]:
    lines = _source(commit, module)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    listed: list[dict[str, object]] = []
    with use_db(str(session), WorkDB.Mode.open) as db:
        done = db.completed_work_items
        for item in db.pending_work_items:
            counts[item.mutations[0].definition_name or "?"].update(("mutants", "pending"))
    for item, result in done:
        if result.worker_outcome == WorkerOutcome.SKIPPED:
            continue
        mutation = item.mutations[0]
        function = mutation.definition_name or "?"
        line = lines[mutation.start_pos[0] - 1].strip()
        if result.worker_outcome != WorkerOutcome.NORMAL:
            outcome = "error"
        elif result.test_outcome == TestOutcome.KILLED:
            outcome = "killed"
        elif result.test_outcome == TestOutcome.SURVIVED:
            reason = reason_for(module, mutation.operator_name, line)
            outcome = "equivalent" if reason else "survived"
            listed.append({
                "module": module, "function": function, "line": mutation.start_pos[0],
                "source": line, "operator": mutation.operator_name,
                "occurrence": mutation.occurrence,
                "outcome": outcome, "reason": reason, "diff": result.diff,
            })  # fmt: skip
        else:
            outcome = "error"
        counts[function].update(("mutants", outcome))
    return counts, listed


def publish(sessions: dict[str, Path], commit: str, path: Path) -> int:
    """Print the table, write ``path``; the number of survivors (not equivalent)."""
    rows, listed = [], []
    total: Counter[str] = Counter()
    for module, session in sessions.items():
        if not session.exists():
            continue
        counts, found = _judge(module, session, commit)
        listed.extend(found)
        for function, counted in sorted(counts.items()):
            rows.append(
                {"module": module, "function": function, **{o: counted[o] for o in OUTCOMES}}
            )
            total.update(counted)
    width = max((len(f"{r['module']}:{r['function']}") for r in rows), default=20)
    print(f"{'function':{width}}  " + "  ".join(f"{o:>10}" for o in OUTCOMES))
    for row in rows:
        name = f"{row['module']}:{row['function']}"
        print(f"{name:{width}}  " + "  ".join(f"{row[o]:>10}" for o in OUTCOMES))
    print(f"{'total':{width}}  " + "  ".join(f"{total[o]:>10}" for o in OUTCOMES))
    for survivor in listed:
        if survivor["outcome"] == "survived":
            where = f"{survivor['module']}:{survivor['line']}"
            print(f"SURVIVED {where} {survivor['operator']}: {survivor['source']}")
    path.write_text(
        json.dumps(
            {"commit": commit, "total": {o: total[o] for o in OUTCOMES}, "functions": rows,
             "not_killed": listed},
            indent=1,
        ) + "\n"
    )  # fmt: skip
    return total["survived"]
