"""The mutation run's result: by module and function, mutants, killed, equivalent, survived and
pending, printed as a table and written as JSON (committed) with every survivor's diff."""

from __future__ import annotations

import json
import subprocess
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome

from bench.mutation.equivalent import EQUIVALENT, Equivalent, reason_for
from bench.mutation.paths import ROOT

OUTCOMES = ("mutants", "killed", "equivalent", "survived", "pending", "error")


def _source(commit: str, module: str) -> list[str]:
    return subprocess.run(
        ["git", "show", f"{commit}:{module}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.splitlines()


def judge(
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
            reason = reason_for(module, mutation.operator_name, line, _added(result.diff))
            outcome = "equivalent" if reason else "survived"
            listed.append(
                {
                    "module": module,
                    "function": function,
                    "line": mutation.start_pos[0],
                    "source": line,
                    "operator": mutation.operator_name,
                    "occurrence": mutation.occurrence,
                    "outcome": outcome,
                    "reason": reason,
                    "diff": result.diff,
                    "job_id": item.job_id,
                }
            )
        else:
            outcome = "error"
        counts[function].update(("mutants", outcome))
    return counts, listed


def publish(sessions: dict[str, Path], commit: str, path: Path, *, seconds: float = 0.0) -> int:
    """Print the table, write ``path``; the number of survivors (not equivalent). ``seconds``:
    what the runs behind it took, all sessions (resumed runs) together."""
    rows, listed = [], []
    total: Counter[str] = Counter()
    for module, session in sessions.items():
        if not session.exists():
            continue
        counts, found = judge(module, session, commit)
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
    unmet = stale(
        listed, done={r["module"] for r in rows} - {r["module"] for r in rows if r["pending"]}
    )
    for listing in unmet:
        print(f"STALE equivalent listing {listing.module} {listing.operator}: {listing.line}")
    path.write_text(
        json.dumps(
            {
                "commit": commit,
                "run_seconds": round(seconds),
                "total": {o: total[o] for o in OUTCOMES},
                "functions": rows,
                "not_killed": listed,
            },
            indent=1,
        )
        + "\n"
    )
    path.with_suffix(".md").write_text(markdown(commit, rows, total, listed, seconds=seconds))
    return total["survived"] + len(unmet)


def stale(listed: list[dict[str, Any]], *, done: set[str]) -> list[Equivalent]:
    """Listings in ``equivalent.py`` that no surviving mutant of a finished module meets: a
    claim the tests have since disproved (the mutant is killed) or a line that moved."""
    met = [m for m in listed if m["outcome"] == "equivalent"]
    return [
        e
        for e in EQUIVALENT
        if e.module in done
        and not any(
            e.matches(m["module"], m["operator"], m["source"], _added(m["diff"])) for m in met
        )
    ]


def _added(diff: object) -> str:
    """The lines a mutant's diff adds: what the mutated source reads."""
    text = diff if isinstance(diff, str) else "\n".join(diff or ())  # type: ignore[call-overload]
    return "\n".join(d[1:] for d in text.splitlines() if d.startswith("+") and d[1:2] != "+")


def markdown(
    commit: str,
    rows: list[dict[str, Any]],
    total: Counter[str],
    listed: list[dict[str, Any]],
    *,
    seconds: float = 0.0,
) -> str:
    """The published table (``docs/results/mutation.md``): by module, by function, then every
    mutant not killed - the equivalent ones with their reasons, the survivors with their line."""
    by_module: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        by_module[row["module"]].update({o: row[o] for o in OUTCOMES})
    lines = [
        "# Mutation testing of the safety functions",
        "",
        f"Generated by `bench/mutation/run.py` (cosmic-ray 8.7) for commit `{commit[:12]}`;"
        " every function in scope, by module (`docs/development.md` says how it runs)."
        + (f" The runs took {seconds / 60:.0f} min on 2 cores." if seconds else ""),
        "",
        "| module | " + " | ".join(OUTCOMES) + " |",
        "|---|" + "---|" * len(OUTCOMES),
    ]
    for module, counted in by_module.items():
        lines.append(f"| `{module}` | " + " | ".join(str(counted[o]) for o in OUTCOMES) + " |")
    lines.append("| total | " + " | ".join(str(total[o]) for o in OUTCOMES) + " |")
    lines += ["", "## By function", "", "| function | " + " | ".join(OUTCOMES) + " |"]
    lines.append("|---|" + "---|" * len(OUTCOMES))
    for row in rows:
        name = f"`{row['module'].removeprefix('forecaster/')}:{row['function']}`"
        lines.append(f"| {name} | " + " | ".join(str(row[o]) for o in OUTCOMES) + " |")
    for outcome, title in (("equivalent", "Equivalent"), ("survived", "Survived")):
        found = [m for m in listed if m["outcome"] == outcome]
        lines += ["", f"## {title} ({len(found)})", ""]
        for m in found:
            why = f": {m['reason']}" if m["reason"] else ""
            lines.append(
                f"- `{m['module']}:{m['line']}` {m['function']}, {m['operator']}:"
                f" `{m['source']}`{why}"
            )
    return "\n".join(lines) + "\n"
