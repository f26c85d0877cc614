"""What declared notice buys: the frontier's chosen points replayed with CronJob and JobSet notice.

The ITP traces record when pods were created, not what announced them. Here a share MIX of each
trace's GPU-hours is announced - half by CronJobs visible a day ahead, half by JobSet stages
waiting 2-15 minutes on an initializer (``simulation.declared_notice``; whole submissions drawn
by seeded uniform sampling, independent of size) - and the daemon's own notice sources read the
objects from the twin. MIX values and seeds are fixed here, before any run, and never tuned
afterwards; every figure is *simulated notice*.

Per trace it replays the frontier's chosen points (``--frontier-json``: its ``chosen`` +5 % and
+10 % points, picked on the tuning days without notice) from day 0 to the end of the evaluation
window, for MIX none, 10 %, 30 %, 50 % and seeds 1-3, and prints the evaluation window against
static headroom at the same GPU-hours (the frontier's static curve: static reads nothing, so
notice does not move it) - share > 5 min / mean / P95 ratios, min-max over the seeds - the P95
against reactive's, and the waits of jobs announced at least one lead time ahead (P95; how many
over 30 s, and how many of those waited on a node still pulling the image). MIX none must
reproduce the frontier's rows; the bench says whether it does. Goals (issue "notice"): with
30 % announced, <= 0.6x / 0.8x / 0.85x of static at +5 % on both traces; moonshot P95 -80 %
against reactive at <= +10 %.

Run: ``.venv/bin/python -m bench.experiments.declared_notice --trace cluster04 --frontier-json
docs/results/frontier-cluster04.json [--mixes 0,10,30,50] [--seeds 1,2,3] [--workers 2]``
(20 replays of 50 days a trace: about 25-40 min on 2 idle cores). ``--kind queue --mixes 30``
announces the share through Kueue's pending queue instead (``--notice queue=S:2m-15m``; the
``kueue-pending`` source reads it), the issue "notice, continued"'s row.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import logging
import resource
import time
from pathlib import Path
from typing import Any

from bench.performance.replay import trace_windows
from forecaster.app.replay_policies import replay_policy
from forecaster.core.jobs import JobTrace
from forecaster.durations import DAY
from forecaster.simulation.declared_notice import (
    NoticeHold,
    NoticeMix,
    NoticeWaits,
    declare,
    notice_hold,
    notice_waits,
)
from forecaster.simulation.frontier import BUDGETS_PERCENT, KEYS, from_document, ratios
from forecaster.simulation.metrics import ReplayMetrics, measure
from forecaster.simulation.replay import ReplaySetup, replay
from forecaster.simulation.workers import run_each, usable_cpus

KINDS = {
    "mixed": lambda share, seed: NoticeMix(
        cron_share=share / 2, pipeline_share=share / 2, seed=seed
    ),
    "queue": lambda share, seed: NoticeMix(
        queue_share=share, queue_min_seconds=120.0, queue_max_seconds=900.0, seed=seed
    ),
}
"""How a share of GPU-hours is announced: fixed before any run, never tuned afterwards."""
KIND_TEXT = {
    "mixed": "half cron 1 d ahead, half pipeline 2-15 min",
    "queue": "all queued in Kueue 2-15 min, read through its visibility API",
}


@dataclasses.dataclass(frozen=True)
class Task:
    budget: int
    mix_percent: int
    seed: int
    setup: ReplaySetup


def replayed(
    task: Task, *, jobs: JobTrace, window: tuple[float, float]
) -> tuple[ReplayMetrics, list[NoticeWaits], dict[str, Any], NoticeHold | None]:
    """One replay (in a worker): the evaluation window's metrics, its waits by notice, the
    notice ledger's verdict per source over the replay's last 7 days (``ledger``) and the
    prewarm held for announced items before their pods came (``notice_hold``)."""
    policy = replay_policy("predictive", task.setup, jobs=jobs)
    run = replay(jobs, policy, setup=task.setup)
    record = run.record
    metrics = measure(
        record,
        window=window,
        price_on_demand=task.setup.price_on_demand,
        price_spot=task.setup.price_spot,
        handoffs=getattr(policy, "handoffs", 0),
    )
    mix = task.setup.twin.notice
    groups, hold = [], None
    if mix is not None:
        twin = task.setup.twin
        declared = declare(jobs, mix)
        hold = notice_hold(run.notice_ended, jobs, declared, window=window)
        groups = notice_waits(
            record.job_submit,
            record.job_start,
            declared,
            lead_seconds=twin.provision_seconds + twin.image_pull_seconds,
            window=window,
            end=record.end,
            placed=record.job_placed,
        )
    return metrics, groups, ledger(policy, now=int(record.end)), hold


def ledger(policy: object, *, now: int) -> dict[str, Any]:
    """Per source: items resolved in the last 7 days, the share that came, and the GPU-hours
    held for the ones that did not (the prewarm notice wasted)."""
    found = getattr(getattr(policy, "reconciler", None), "notice_ledger", None)
    if found is None:
        return {}
    out = {}
    for source in sorted({o.source for o in found.outcomes}):
        precision, resolved = found.precision(source, now=now)
        out[source] = {
            "resolved_7d": resolved,
            "precision_7d": precision,
            "waste_gpu_hours_7d": found.waste_gpu_hours(source, now=now),
        }
    return out


def main() -> None:
    own = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    own.add_argument("--trace", choices=("cluster04", "cluster07"), default="cluster04")
    own.add_argument("--frontier-json", type=Path, required=True)
    own.add_argument("--mixes", default="0,10,30,50", help="percent of GPU-hours announced")
    own.add_argument("--seeds", default="1,2,3")
    own.add_argument(
        "--kind",
        choices=tuple(KINDS),
        default="mixed",
        help="mixed: half cron 1 d ahead, half pipeline 2-15 min; queue: Kueue's pending queue"
        " 2-15 min",
    )
    own.add_argument("--tune-days", default="10-30")
    own.add_argument("--eval-days", default="30-50")
    own.add_argument("--workers", type=int, default=usable_cpus())
    own.add_argument(
        "--json",
        type=Path,
        help="write every run here (scripts/results_tables.py makes the published table)",
    )
    mine = own.parse_args()
    logging.basicConfig(level=logging.WARNING)
    frontier = json.loads(mine.frontier_json.read_text())
    mixes = [int(m) for m in mine.mixes.split(",")]
    seeds = [int(s) for s in mine.seeds.split(",")]
    chosen = {
        b: frontier["chosen"][str(b)] for b in BUDGETS_PERCENT if str(b) in frontier["chosen"]
    }
    jobs, epoch, setup, _, evaluate = trace_windows(
        mine.trace, tune_days=mine.tune_days, eval_days=mine.eval_days
    )
    tasks = []
    for budget, point in chosen.items():
        at = setup.at_point(point["knob"], point.get("floor_gpus", 0))
        for mix in mixes:
            for seed in seeds if mix else seeds[:1]:
                declared = KINDS[mine.kind](mix / 100, seed) if mix else None
                twin = dataclasses.replace(at.twin, notice=declared)
                tasks.append(Task(budget, mix, seed, dataclasses.replace(at, twin=twin)))
    window = (epoch + evaluate[0] * DAY, epoch + evaluate[1] * DAY)
    began = time.perf_counter()
    results = run_each(
        functools.partial(replayed, jobs=jobs, window=window), tasks, workers=mine.workers
    )
    print(
        f"{mine.trace}: {len(tasks)} replays on {mine.workers} workers in"
        f" {time.perf_counter() - began:.0f} s; the frontier's chosen points with simulated"
        f" notice ({mine.kind}: {KIND_TEXT[mine.kind]}), evaluation days {mine.eval_days}"
    )
    static = [from_document(m) for m in frontier["static"]]
    reactive = frontier["reactive"]
    for task, (m, groups, verdicts, hold) in zip(tasks, results, strict=True):
        ahead = groups[0] if groups else None
        print(
            f"+{task.budget} % MIX {task.mix_percent:2d} % seed {task.seed}:"
            f" {m.gpu_hours / reactive['gpu_hours'] - 1:+6.2%} GPU-h, P95 {m.p95_wait_s:4.0f} s,"
            f" mean {m.mean_wait_s:6.1f} s, > 5 min {m.share_waiting_over_5min:6.1%}; vs static: "
            + ratios(m, static)
            + f"; P95 {m.p95_wait_s / reactive['p95_wait_s'] - 1:+.0%} vs reactive"
            + (
                f"; {ahead.group}: {ahead.jobs} jobs, P95 {ahead.p95_wait_s:.0f} s,"
                f" {ahead.over_30s} over 30 s ({ahead.over_30s_on_node} of them on a node"
                " still pulling the image)"
                if ahead is not None
                else ""
            )
            + "".join(
                f"; {source}: {v['resolved_7d']} items in the last 7 days,"
                f" {v['precision_7d'] or 0:.0%} came, {v['waste_gpu_hours_7d']:.1f} GPU-h held"
                " for the rest"
                for source, v in verdicts.items()
            )
            + (f"; {hold.said()}" if hold is not None else "")
        )
        if task.mix_percent == 0:
            print(f"    MIX none reproduces the frontier's row: {_same(m, chosen[task.budget])}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB (parent)")
    if mine.json:
        runs = [
            {
                "budget": task.budget,
                "mix_percent": task.mix_percent,
                "seed": task.seed,
                "metrics": dataclasses.asdict(m),
                "groups": [dataclasses.asdict(g) for g in groups],
                "ledger": verdicts,
                "hold": None if hold is None else dataclasses.asdict(hold),
            }
            for task, (m, groups, verdicts, hold) in zip(tasks, results, strict=True)
        ]
        document = {
            "trace": mine.trace,
            "kind": mine.kind,
            "tune_days": mine.tune_days,
            "eval_days": mine.eval_days,
            "reactive": reactive,
            "static": frontier["static"],
            "runs": runs,
        }
        mine.json.write_text(json.dumps(document, indent=1, default=float) + "\n")


def _same(measured: ReplayMetrics, row: dict[str, Any]) -> str:
    differ = [k for k in KEYS if abs(float(getattr(measured, k)) - float(row[k])) > 1e-9]
    return "yes" if not differ else "NO (" + ", ".join(differ) + ")"


if __name__ == "__main__":
    main()
