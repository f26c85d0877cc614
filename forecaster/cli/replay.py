"""``forecaster replay``: run the policies on a trace, print the table, write JSON and HTML."""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from forecaster import __version__
from forecaster.app.build_replay import (
    jobs_from_files,
    on_this_cluster,
    replay_setup_from_settings,
    simulated_setup,
)
from forecaster.app.history import PoolHistory, read_history
from forecaster.app.replay_policies import frontier_knobs, replay_policy
from forecaster.app.replay_runs import KEYS, against_static, image_pull_sweep, run_all, table
from forecaster.cli.replay_args import EPOCH_DEFAULT, POOL_DEFAULTS
from forecaster.core.cluster import MeasuredLead
from forecaster.core.jobs import JobTrace
from forecaster.core.series import iso_utc
from forecaster.errors import ConfigError
from forecaster.forecasting.registry import known_names
from forecaster.service.clock import SystemClock
from forecaster.settings import PoolSettings, Settings, load_settings
from forecaster.simulation.declared_notice import declare, notice_hold, notice_waits
from forecaster.simulation.frontier import FrontierInterrupted, frontier, parse_days, said
from forecaster.simulation.pool import SimulatedPool
from forecaster.simulation.replay import ReplayResult, ReplaySetup
from forecaster.simulation.report import ReportRun, render, render_frontier, render_partial
from forecaster.simulation.twin import MODELLED_SOURCES
from forecaster.simulation.workers import Interrupted, usable_cpus


def load_trace(
    args: argparse.Namespace, *, settings: Settings | None = None
) -> tuple[JobTrace, int]:
    """The jobs to replay and the trace's time zero (epoch seconds); with ``--config``'s
    ``settings`` they default to its twin's trace and epoch."""
    if settings is not None and args.series is None:
        twin = settings.twin
        args.jobs = args.jobs or twin.jobs
        if args.epoch == EPOCH_DEFAULT:
            args.epoch = twin.epoch
    epoch = 0
    if args.jobs is not None:
        try:
            epoch = int(datetime.fromisoformat(args.epoch).timestamp())
        except ValueError:
            raise ConfigError(f"--epoch: bad ISO 8601 time {args.epoch!r}") from None
    return jobs_from_files(jobs=args.jobs, series=args.series, epoch=epoch)


def pool_history(args: argparse.Namespace, settings: Settings | None) -> PoolHistory | None:
    """With ``--days``: the configured pool's own history from Prometheus, the replay's days
    set from how it splits (``app.history.windows``), and what was found said; else None."""
    if args.days is None:
        if args.end is not None:
            raise ConfigError("--end: only with --days (the history to replay)")
        return None
    if settings is None:
        raise ConfigError("--days: needs --config (the Prometheus and the pool to read)")
    if args.jobs is not None or args.series is not None:
        raise ConfigError("--days: replays the pool's own history, not --jobs or --series")
    args.pool = args.pool or settings.twin.pool
    end = args.end if args.end is not None else int(SystemClock().now().timestamp())
    history = read_history(
        settings, pool=args.pool, days=args.days, end=end, replay=True, frontier=args.frontier
    )
    split = history.windows
    assert split is not None  # asked for a replay
    args.start_day, args.warmup_days, args.end_day = 0.0, float(split.warmup), float(split.days)
    tuned_to = split.warmup + split.tuned
    args.tune_days, args.eval_days = f"{split.warmup}-{tuned_to}", f"{tuned_to}-{split.days}"
    print(history.said())
    print(f"replaying {split.said()}")
    print(lead_said(history.lead, settings.pool(args.pool)))
    return history


def lead_said(lead: MeasuredLead | None, pool: PoolSettings) -> str:
    """One line: the lead the twin launches nodes with, and who measured it."""
    if lead is None:
        return (
            f"lead: the configured {pool.lead_time.provisioning_seconds:g} s launch +"
            f" {pool.lead_time.image_pull_seconds:g} s image pull (neither the daemon nor"
            " Karpenter's metrics measured one in this history)"
        )
    by = (
        "the daemon (medians over the history)"
        if lead.origin == "daemon"
        else f"Karpenter (medians of {lead.launches:,} pods' provisioning, all NodePools)"
    )
    startup = f"{lead.startup_seconds:.0f} s" if lead.startup_seconds is not None else "not seen"
    return f"lead: measured by {by}: launch {lead.provisioning_seconds:.0f} s, start-up {startup}"


def setup_from(
    args: argparse.Namespace,
    epoch: int,
    *,
    settings: Settings | None = None,
    lead: MeasuredLead | None = None,
) -> ReplaySetup:
    """Twin, window and caps from the command line - or from ``--config``'s ``settings``
    (the pool's ``lead`` as measured, where it was)."""
    _check(args)
    if settings is None and args.pool is not None:
        raise ConfigError("--pool: names a pool of --config")
    if settings is not None:
        return _configured_setup(args, epoch, settings=settings, lead=lead)
    pool = SimulatedPool(
        gpus_per_node=args.gpus_per_node,
        provision_seconds=args.provision,
        image_pull_seconds=args.image_pull,
        decide_every_seconds=args.decide_every,
        wake_seconds=args.wake_every,
        consolidate_after_seconds=args.consolidate_after,
        warm_image=not args.no_warm_image,
        max_prewarm_gpus=args.max_prewarm_gpus,
        price_on_demand=args.price,
        price_spot=args.spot_price,
        model=args.model,
        quantile=args.quantile,
        floor_gpus=args.floor_gpus,
        backend=args.backend,
        kueue_quota_gpus=args.kueue_quota_gpus,
        kueue_notice_seconds=args.kueue_notice,
        notice=args.notice,
    )
    return simulated_setup(
        pool,
        epoch=epoch,
        start_day=args.start_day,
        warmup_days=args.warmup_days,
        end_day=args.end_day,
    )


def _check(args: argparse.Namespace) -> None:
    """The replay flags that cannot work, refused one line each (``ConfigError``)."""
    if args.model not in known_names():
        raise ConfigError(f"--model: unknown {args.model!r}; known: {known_names()}")
    if not 0.5 < args.quantile < 1:
        raise ConfigError("--quantile must be between 0.5 and 1")
    if args.floor_gpus < 0:
        raise ConfigError("--floor-gpus must be >= 0")
    if args.kueue_notice and args.kueue_quota_gpus is not None:
        raise ConfigError("--kueue-notice with --kueue-quota-gpus: not modelled together")
    if not args.start_day <= args.start_day + args.warmup_days < args.end_day:
        raise ConfigError("--start-day, --warmup-days and --end-day leave no metrics window")


def _configured_setup(
    args: argparse.Namespace, epoch: int, *, settings: Settings, lead: MeasuredLead | None
) -> ReplaySetup:
    """The configured pool's setup (``--config``), launching as measured where ``lead`` was;
    the simulated cluster's Kueue and notice still from the command line."""
    given = [f for f, default in POOL_DEFAULTS.items() if getattr(args, f) != default]
    if given:
        flags = ", ".join("--" + f.replace("_", "-") for f in given)
        raise ConfigError(f"{flags}: with --config the configured pool sets these")
    configured = replay_setup_from_settings(
        settings,
        epoch=epoch,
        start_day=args.start_day,
        warmup_days=args.warmup_days,
        end_day=args.end_day,
        model=args.model,
        pool_name=args.pool,
    )
    unmodelled = [s for s in settings.notice.sources if s not in MODELLED_SOURCES]
    if unmodelled:
        print(
            f"notice sources the replay does not model (their work is not announced here):"
            f" {', '.join(unmodelled)}"
        )
    return on_this_cluster(
        configured,
        lead=lead,
        kueue_quota_gpus=args.kueue_quota_gpus,
        kueue_notice_seconds=args.kueue_notice,
        notice=args.notice,
    )


def replay_command(args: argparse.Namespace) -> int:
    """The ``replay`` subcommand. The predictive policy is the daemon's loop: its per-tick
    decision line, at one tick per simulated half-minute for weeks, would be millions of lines,
    and a churning SLO's hand-off warnings thousands per frontier - the loop logs errors only
    while it replays (the table counts hand-offs: its handoffs column)."""
    loop = logging.getLogger("forecaster.reconcile.loop")
    level = loop.level
    loop.setLevel(logging.ERROR)
    try:
        return _replay(args)
    finally:
        loop.setLevel(level)


def _replay(args: argparse.Namespace) -> int:
    """``replay_command`` with the loop quieted."""
    _make_output_folders(args)
    if args.frontier:
        return frontier_command(args)
    settings = load_settings(args.config) if args.config is not None else None
    history = pool_history(args, settings)
    jobs, epoch = (history.jobs, history.start) if history else load_trace(args, settings=settings)
    setup = setup_from(args, epoch, settings=settings, lead=history.lead if history else None)
    names = [n.strip() for n in args.policy.split(",") if n.strip()]
    sweep_names = _sweep_names(args.sweep)
    pulls = _image_pulls(args.image_pull_sweep)
    said_notice = _notice_line(setup, jobs)
    # a swept K also asked for as a policy (static:64 in both) runs and is listed once
    asked = {f"static:{args.static_gpus}" if n == "static" else n for n in names}
    fresh = [n for n in dict.fromkeys(sweep_names) if n not in asked]
    try:
        every = run_all(names + fresh, jobs, setup=setup, static_gpus=args.static_gpus)
    except Interrupted as stop:
        return _write_partial(args, _partial(stop, runs=len(names) + len(fresh)))
    results, ran = every[: len(names)], every[len(names) :]
    by_name = {r.policy: r for r in results + ran}
    sweep = [by_name[n] for n in dict.fromkeys(sweep_names)]
    for line in table(results + ran):
        print(line)
    oracle = next((r for r in results if r.policy == "oracle"), None)
    for r in results:
        if oracle is not None and r is not oracle and oracle.metrics.gpu_hours:
            ratio = r.metrics.gpu_hours / oracle.metrics.gpu_hours
            print(f"{r.policy}: GPU-hours {ratio:.3f} x oracle")
    comparison = against_static(results, sweep)
    for line in comparison:
        print(line)
    _print_notice_waits(results, setup, jobs)
    by_pull: dict[str, dict[str, Any]] = {}
    if pulls:
        pull_lines, by_pull = image_pull_sweep(
            names, jobs, setup=setup, pulls=pulls, static_gpus=args.static_gpus
        )
        for line in pull_lines:
            print(line)
    if args.json:
        _write_json(args.json, results + sweep, by_pull=by_pull, notice=said_notice)
    if args.report:
        _write_report(
            args,
            history,
            jobs=jobs,
            setup=setup,
            results=results,
            sweep=sweep,
            comparison=comparison,
            said_notice=said_notice,
        )
        print(f"wrote {args.report}")
    return 0


def _sweep_names(sweep: str) -> list[str]:
    """``--sweep`` as static policy names; a clear error for anything but GPU counts."""
    try:
        return [f"static:{int(k)}" for k in sweep.split(",") if k.strip()]
    except ValueError:
        raise ConfigError(
            f"--sweep: expected GPU counts separated by commas, e.g. 0,16,32; got {sweep!r}"
        ) from None


def _partial(stop: Interrupted, *, runs: int) -> dict[str, Any]:
    """What an interrupted replay keeps: the runs that finished, with their figures."""
    done = list(stop.finished.values())
    return {
        "partial": True,
        "runs": runs,
        "finished": {r.policy: {"eval": {k: getattr(r.metrics, k) for k in KEYS}} for r in done},
    }


def _write_report(
    args: argparse.Namespace,
    history: PoolHistory | None,
    *,
    jobs: JobTrace,
    setup: ReplaySetup,
    results: list[ReplayResult],
    sweep: list[ReplayResult],
    comparison: list[str],
    said_notice: str | None,
) -> None:
    """The HTML report of a plain replay (``--report``)."""
    runs = [ReportRun(r.policy, r.metrics, r.record) for r in results]
    sweep_runs = [ReportRun(r.policy, r.metrics, r.record) for r in sweep]
    notes = [
        f"trace: {_trace_name(args, history)}; {len(jobs)} jobs; metrics over days"
        f" {args.start_day + args.warmup_days:g}-{args.end_day:g} (warm-up excluded)",
        f"nodes of {setup.twin.gpus_per_node} GPUs;"
        f" provisioning {setup.twin.provision_seconds:g} s;"
        f" image pull {setup.twin.image_pull_seconds:g} s; empty nodes removed after"
        f" {setup.twin.consolidate_after_seconds:g} s; warm image {setup.twin.warm_image}",
        f"predictive: {setup.model}, retrained weekly on past demand only; caps"
        f" {setup.max_prewarm_gpus} prewarm GPUs",
        *([said_notice] if said_notice else []),
    ]
    args.report.write_text(
        render(
            runs,
            sweep_runs,
            title="forecaster replay",
            window=(setup.warmup_end, setup.end),
            notes=notes,
            comparison=comparison,
        )
    )


def _write_json(
    path: Path, results: list[ReplayResult], *, by_pull: dict[str, Any], notice: str | None
) -> None:
    """A plain replay's JSON: the figures per policy, the image-pull sweep, the notice line."""
    document: dict[str, Any] = {
        r.policy: {k: getattr(r.metrics, k) for k in KEYS} | {"jobs": r.metrics.jobs}
        for r in results
    }
    if by_pull:
        document["image_pull_sweep"] = by_pull
    if notice:
        document["notice"] = notice
    path.write_text(json.dumps(document, indent=2, sort_keys=True))
    print(f"wrote {path}")


def frontier_command(args: argparse.Namespace) -> int:
    """``replay --frontier`` (see ``simulation.frontier``)."""
    workers = usable_cpus() if args.workers is None else args.workers
    if workers < 1:
        raise ConfigError(f"--workers: at least 1 replay at a time, got {workers}")

    settings = load_settings(args.config) if args.config is not None else None
    history = pool_history(args, settings)
    tune = parse_days(args.tune_days, "--tune-days")
    evaluate = parse_days(args.eval_days, "--eval-days")
    jobs, epoch = (history.jobs, history.start) if history else load_trace(args, settings=settings)
    args.warmup_days, args.end_day = tune[0] - args.start_day, evaluate[1]
    setup = setup_from(args, epoch, settings=settings, lead=history.lead if history else None)

    def progress(text: str) -> None:
        print(f"frontier: {text}", file=sys.stderr)

    said_notice = _notice_line(setup, jobs)
    meta = _meta(args, epoch=epoch, jobs=jobs, history=history)
    try:
        document, lines = frontier(
            jobs,
            setup,
            make_policy=replay_policy,
            epoch=epoch,
            tune=tune,
            evaluate=evaluate,
            workers=workers,
            progress=progress,
            pool=(args.pool or settings.twin.pool) if settings is not None else None,
            policy_knobs=frontier_knobs(),
            **({} if args.bounds else {"continuation_gaps": ()}),  # the bounds: 16 more runs
        )
    except FrontierInterrupted as stop:
        return _write_partial(args, stop.document | {"meta": meta})
    document["meta"] = meta
    for line in lines:
        print(line)
    if said_notice:
        document["notice"] = said_notice
    if args.json:
        args.json.write_text(json.dumps(document, indent=2, sort_keys=True))
        print(f"wrote {args.json}")
    if args.report:
        notes = [
            *([said_notice] if said_notice else []),
            f"trace: {_trace_name(args, history)}; {len(jobs)} jobs; knobs chosen on days"
            f" {args.tune_days}, judged on days {args.eval_days}",
            "each chosen point is compared with static headroom at its own evaluation GPU-hours"
            " (the static curve interpolated)",
        ]
        args.report.write_text(
            render_frontier(
                document, title="forecaster replay --frontier", notes=notes, said=said(document)
            )
        )
        print(f"wrote {args.report}")
    return 0


def _write_partial(args: argparse.Namespace, document: dict[str, Any]) -> int:
    """Ctrl-C: write what finished (JSON and report marked partial), say so in one line, exit
    130 (``cli.main``'s code for an interrupt)."""
    finished = document.get("finished", {})
    lines = [
        f"{label}: " + ", ".join(f"{k} {v:.4g}" for k, v in figures["eval"].items())
        for label, figures in finished.items()
    ]
    written = []
    if args.json:
        args.json.write_text(json.dumps(document, indent=2, sort_keys=True))
        written.append(str(args.json))
    if args.report:
        notes = [f"{len(finished)} of {document.get('runs', '?')} replays finished"]
        args.report.write_text(render_partial(lines, title="forecaster replay", notes=notes))
        written.append(str(args.report))
    wrote = f"; wrote {' and '.join(written)} (partial)" if written else ""
    print(
        f"forecaster: interrupted: {len(finished)} of {document.get('runs', '?')} replays"
        f" finished{wrote}",
        file=sys.stderr,
    )
    return 130


def _meta(
    args: argparse.Namespace, *, epoch: int, jobs: JobTrace, history: PoolHistory | None
) -> dict[str, Any]:
    """What a frontier's JSON was made from: the trace (or the pool's history), its time zero,
    every flag, the package version and the git commit of the code (None outside a checkout)."""
    return {
        "trace": str(args.jobs or args.series) if history is None else None,
        "pool": args.pool if history is None else history.pool,
        "history": None if history is None else history.said(),
        "epoch": iso_utc(epoch),
        "jobs": len(jobs),
        "parameters": {
            k: str(v) if isinstance(v, Path) else v
            for k, v in sorted(vars(args).items())
            if isinstance(v, str | int | float | bool | Path | None)
        },
        "forecaster": __version__,
        "commit": _git_commit(),
    }


def _trace_name(args: argparse.Namespace, history: PoolHistory | None) -> str:
    """The replayed trace as the report names it: its file, or the pool's history."""
    return history.said() if history is not None else str(args.jobs or args.series)


def _git_commit() -> str | None:
    """The commit of the checkout this package runs from, if it runs from one."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def _image_pulls(text: str) -> list[float]:
    """``--image-pull-sweep``'s seconds (empty: no sweep)."""
    try:
        pulls = [float(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise ConfigError(
            f"--image-pull-sweep: expected seconds separated by commas, e.g. 0,60,300; got {text!r}"
        ) from None
    if any(p < 0 for p in pulls):
        raise ConfigError(f"--image-pull-sweep: times must be >= 0 s, got {text}")
    return pulls


def _make_output_folders(args: argparse.Namespace) -> None:
    """Create the folders of --json and --report before minutes of work, or fail at once."""
    for flag, path in (("--json", args.json), ("--report", args.report)):
        if path is None:
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"{flag}: cannot create {path.parent}: {exc.strerror or exc}"
            ) from None


def _notice_line(setup: ReplaySetup, jobs: JobTrace) -> str | None:
    """How a run with declared notice labels its figures, printed first (None: no notice)."""
    mix = setup.twin.notice
    if mix is None:
        return None
    share = declare(jobs, mix).announced_share(jobs)
    line = f"simulated notice: {mix.label}; {share:.1%} of the trace's GPU-hours announced"
    print(line)
    return line


def _print_notice_waits(results: list[ReplayResult], setup: ReplaySetup, jobs: JobTrace) -> None:
    """With declared notice: each policy's waits for jobs announced at least one lead time
    ahead, announced later, and not announced; for the daemon, the prewarm it held for
    announced items before their pods came (``notice_hold``)."""
    mix = setup.twin.notice
    if mix is None:
        return
    notice = declare(jobs, mix)
    lead = setup.twin.provision_seconds + setup.twin.image_pull_seconds
    for r in results:
        groups = notice_waits(
            r.record.job_submit,
            r.record.job_start,
            notice,
            lead_seconds=lead,
            window=(setup.warmup_end, setup.end),
            end=r.record.end,
        )
        said = "; ".join(
            f"{g.group}: {g.jobs} jobs, P95 {g.p95_wait_s:.0f} s, mean {g.mean_wait_s:.1f} s"
            for g in groups
        )
        print(f"{r.policy} (simulated notice): {said}")
        if r.notice_ended:
            hold = notice_hold(r.notice_ended, jobs, notice, window=(setup.warmup_end, setup.end))
            print(f"{r.policy} {hold.said()}")
