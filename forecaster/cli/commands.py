"""The ``forecaster`` subcommands: each calls the service and prints (parsing: ``cli``)."""

from __future__ import annotations

import argparse
import contextlib
import csv
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from tqdm import tqdm

from forecaster.app import build, cleanup, connect, model_sharing, training
from forecaster.cli.oneshot import settings_from
from forecaster.cli.replay import replay_command
from forecaster.cli.report import (
    backtest_header,
    plan_report,
    score_table,
    selection_line,
    training_report,
)
from forecaster.core.cluster import quantile_label
from forecaster.core.series import iso_utc
from forecaster.errors import ConfigError
from forecaster.forecasting.backtest import BacktestSpec, ModelRun
from forecaster.forecasting.registry import FALLBACK, known_names
from forecaster.forecasting.selection import select
from forecaster.forecasting.training import TrainingPlan, backtest_models
from forecaster.service.clock import SystemClock
from forecaster.service.embedded import serve_embedded
from forecaster.service.http import ensure_port_free
from forecaster.service.scheduler import serve_cluster
from forecaster.settings import Settings
from forecaster.sources.base import DemandSource


def dispatch(args: argparse.Namespace) -> int:
    """Run the parsed command; ``ForecasterError`` propagates to ``cli.main``."""
    without_config = {"backtest": _backtest, "replay": replay_command}
    if args.command in without_config:
        return without_config[args.command](args)
    handlers: dict[str, Callable[[Settings, argparse.Namespace], int]] = {
        "models": _models,
        "plan": lambda s, a: _plan(s, data=a.data, pool=a.pool),
        "run": _run,
        "train": _train_command,
    }
    return handlers[args.command](settings_from(args.config), args)


@contextlib.contextmanager
def _model_bar(total: int, *, desc: str) -> Iterator[Callable[[str], None]]:
    """A progress bar over model backtests on stderr (only on a terminal: CronJob logs get
    none); yields the callback that advances it."""
    with tqdm(
        total=total,
        desc=desc,
        unit="model",
        file=sys.stderr,
        disable=None,
        bar_format="{desc} {bar} {n}/{total} model backtests{postfix} [{elapsed}]",
    ) as bar:

        def advance(model: str) -> None:
            bar.set_postfix_str(model, refresh=False)
            bar.update(1)

        yield advance


def _train_command(settings: Settings, args: argparse.Namespace) -> int:
    pools = list(args.pool or [])
    if args.pool_index is not None:
        if not 0 <= args.pool_index < len(settings.pools):
            raise ConfigError(
                f"--pool-index {args.pool_index}: the config has {len(settings.pools)} pool(s)"
            )
        pools.append(settings.pools[args.pool_index].name)
    return _train(settings, pools=pools or None, time_budget_seconds=args.time_budget)


def _models(settings: Settings, args: argparse.Namespace) -> int:
    if args.models_command == "rollback":
        return _models_rollback(settings, pool=args.pool, to=args.to)
    return _models_list(settings)


def _run(settings: Settings, args: argparse.Namespace) -> int:
    if args.prometheus_url:
        source = settings.source.model_copy(
            update={
                "kind": "prometheus",
                "prometheus": settings.source.prometheus.model_copy(
                    update={"url": args.prometheus_url}
                ),
            }
        )
        settings = settings.model_copy(update={"source": source})
    if args.forecast_only:
        pools = tuple(p.model_copy(update={"forecast_only": True}) for p in settings.pools)
        settings = settings.model_copy(update={"dry_run": True, "pools": pools})
    if args.cluster or args.kube_host or (args.forecast_only and args.prometheus_url):
        local = args.forecast_only
        listen = args.listen or ("127.0.0.1" if local else "0.0.0.0")
        ensure_port_free(listen, args.port)  # before building: a taken port fails at once
        kube = connect.connect(settings, host=args.kube_host)
        service = build.build_cluster_service(settings, kube, elect=not local)
        try:
            return serve_cluster(
                service, port=args.port, listen=listen, duration_seconds=args.duration
            )
        finally:  # Ctrl-C included: say what this run leaves held, and until when
            if not local:
                placeholders = settings.planning.placeholders.namespace
                for line in cleanup.still_held(kube, placeholders=placeholders):
                    print(line, flush=True)
    if settings.source.kind == "prometheus":
        raise ConfigError(
            "source.kind is prometheus: the embedded demo replays CSV samples on the twin;"
            " run read-only from here with --prometheus-url URL --forecast-only, against a"
            " cluster with --cluster (--kube-host URL), or use a csv source"
        )
    if args.speed is not None:
        twin = settings.twin.model_copy(update={"speed": args.speed})
        settings = settings.model_copy(update={"twin": twin})
    ensure_port_free("127.0.0.1", args.port)
    with tempfile.TemporaryDirectory(prefix="forecaster-twin-models-") as models:  # the twin's
        run = build.build_embedded(  # models are the run's own: gone with it, Ctrl-C included
            settings, models_dir=Path(models), choose_point=training.choose_point
        )
        return serve_embedded(run, port=args.port, duration_seconds=args.duration)


def _train(
    settings: Settings, *, pools: list[str] | None, time_budget_seconds: float | None = None
) -> int:
    for name in pools or []:
        settings.pool(name)
    mirror = None
    if settings.models_store == "configmap":  # models are shared data, written even in dry-run
        kube = connect.connect(settings.model_copy(update={"dry_run": False}))
        mirror = build.model_mirror(settings, kube)
    chosen = [p for p in settings.pools if not pools or p.name in pools]
    with _model_bar(len(chosen) * len(settings.forecast.models), desc="train") as advance:
        results = training.train(
            settings,
            pools=pools,
            clock=SystemClock(),
            mirror=mirror,
            progress=advance,
            time_budget_seconds=time_budget_seconds,
        )
    for line in training_report(results, baseline=FALLBACK):
        print(line)
    return 1 if any(r.status == "failed" for r in results) else 0


def _plan(settings: Settings, *, data: Path | None, pool: str | None) -> int:
    """One planning tick with no cluster: the what-if of a cluster sized to today's demand.

    CSV histories each end at their own last row, so each pool is planned at its own "now";
    with Prometheus all pools are planned together, now.
    """
    if pool is not None:
        settings = settings.model_copy(update={"pools": (settings.pool(pool),)})
    elif data is not None and len(settings.pools) > 1:
        names = ", ".join(p.name for p in settings.pools)
        raise ConfigError(
            f"--data needs --pool: the config has {len(settings.pools)} pools ({names})"
        )
    print(
        "what-if: no cluster observed; each pool is assumed to run exactly today's demand on"
        " whole nodes, with no placeholders, under a NodePool limit leaving room for its"
        " max_prewarm_gpus"
    )
    if data is None and settings.source.kind == "prometheus":
        now = int(SystemClock().now().timestamp())
        source = connect.build_source(settings)
        first = settings.pools[0].name  # an unreachable Prometheus: one line, not "model none"
        source.fetch(first, start=now - 3600, end=now, step_seconds=settings.forecast.step_seconds)
        _print_plan(settings, source, now)
        return 0
    for one_pool in settings.pools:
        one = settings.model_copy(update={"pools": (one_pool,)})
        path = data if data is not None else one_pool.csv
        if path is None:
            raise ConfigError(f"pool {one_pool.name}: no CSV history to plan from (use --data)")
        source = connect.csv_source(settings, pool=one_pool.name, path=path)
        now = source.span(one_pool.name, step_seconds=settings.forecast.step_seconds)[1]
        _print_plan(one, source, now)
    return 0


def _print_plan(settings: Settings, source: DemandSource, now: int) -> None:
    record = build.build_reconciler(settings, source=source, what_if=True).tick(now)
    horizons = {p.name: build.pool_horizon(settings, p) for p in settings.pools}
    for line in plan_report(record, horizons=horizons, budgets=build.budgets(settings)):
        print(line)


def _models_rollback(settings: Settings, *, pool: str, to: str | None) -> int:
    settings.pool(pool)
    store = model_sharing.model_store(settings)
    versions = store.versions(pool)
    current = store.current_version(pool)
    if to is None:
        older = [v for v in versions if current is None or v < current]
        if not older:
            raise ConfigError(f"pool {pool}: no version older than {current} to roll back to")
        to = older[-1]
    store.set_current(pool, to)
    print(f"{pool}: current model is now {to} (was {current})")
    return 0


def _models_list(settings: Settings) -> int:
    store = model_sharing.model_store(settings)
    for pool in settings.pools:
        current = store.current_version(pool.name)
        versions = store.versions(pool.name)
        print(f"{pool.name}: {'no model yet' if not versions else ''}")
        for version in versions:
            print(f"  {'*' if version == current else ' '} {version}")
    return 0


def _backtest(args: argparse.Namespace) -> int:
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in names if m not in known_names()]
    if unknown:
        raise ConfigError(f"--models: unknown {unknown}; known: {known_names()}")
    if not 0.5 < args.quantile < 1:
        raise ConfigError("--quantile must be between 0.5 and 1")
    if args.horizon <= 0:
        raise ConfigError(f"--horizon must be longer than 0 s, got {args.horizon} s")
    series, report = connect.read_demand_csv(
        args.data,
        step_seconds=args.step,
        value_column=args.value_column,
        outage_min_seconds=args.outage_min,
    )
    for line in report.describe():
        print(f"data: {line}")
    spec = BacktestSpec(
        horizon_seconds=args.horizon,
        quantile=args.quantile,
        test_seconds=args.test,
        train_seconds=args.train,
        origin_every_seconds=args.every,
        refit_every_seconds=args.refit_every,
    )
    plan = TrainingPlan(
        models=tuple(names),
        horizons_seconds=(args.horizon,),
        quantiles=(0.5, args.quantile),
        selection_horizon_seconds=args.horizon,
        target_quantile=args.quantile,
        coverage_tolerance=args.tolerance,
        min_history_seconds=0,
        test_seconds=args.test,
        train_seconds=args.train,
        origin_every_seconds=args.every,
        refit_every_seconds=args.refit_every,
    )
    with _model_bar(len(names), desc="backtest") as advance:
        runs, scores = backtest_models(series, plan, spec=spec, progress=advance)
    selection = select(scores, target=args.quantile, tolerance=args.tolerance, fallback=FALLBACK)
    print(backtest_header(args.data.name, spec))
    for line in score_table(
        scores, quantile=args.quantile, baseline=FALLBACK, selected=selection.model
    ):
        print(line)
    print(selection_line(selection))
    if args.output:
        rows = _write_forecasts(args.output, runs, horizon=args.horizon, quantile=args.quantile)
        print(f"wrote {rows} forecasts to {args.output}")
    return 0


def _write_forecasts(path: Path, runs: list[ModelRun], *, horizon: int, quantile: float) -> int:
    rows = 0
    upper = quantile_label(quantile).lower()  # p95 for --quantile 0.95
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["origin", "target_time", "horizon_s", "model", "p50", upper, "actual"])
        for run in runs:
            for origin, p50, upper, actual in zip(
                run.origins, run.p50, run.upper, run.actual, strict=True
            ):
                writer.writerow(
                    [
                        iso_utc(int(origin)),
                        iso_utc(int(origin) + horizon),
                        horizon,
                        run.model,
                        f"{p50:.3f}",
                        f"{upper:.3f}",
                        f"{actual:g}",
                    ]
                )
                rows += 1
    return rows
