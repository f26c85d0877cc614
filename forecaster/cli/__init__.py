"""The ``forecaster`` command: parse arguments, call the service, print. No logic of its own.

Every ``ForecasterError`` ends as one line on stderr (``forecaster: error: ...``) and exit code 1;
usage errors exit 2 (argparse). Reports go to stdout, logs to stderr. This module only parses:
the commands (``cli.commands``) and the heavy libraries they use (Prophet, scikit-learn,
statsmodels, the Kubernetes client) are imported after parsing, so ``--help`` and ``--version``
answer at once.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from forecaster import __version__
from forecaster.cli.config_paths import DEFAULT_CONFIG
from forecaster.cli.replay_args import add_replay_arguments, parse_instant
from forecaster.durations import DAY, parse_duration
from forecaster.errors import ForecasterError
from forecaster.forecasting.registry import known_names
from forecaster.sources.base import DEFAULT_VALUE_COLUMN


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    # long: argparse declarations, one add_parser/add_argument per command and option
    parser = argparse.ArgumentParser(
        prog="forecaster", description="Predictive prewarming of GPU capacity for Karpenter."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--version", action="version", version=f"forecaster {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser(
        "run",
        help="run the daemon: on the cluster twin by default (the embedded demo), against a"
        " cluster with --cluster, or read-only from your laptop with --forecast-only",
        description="Run the daemon. Without flags: the embedded demo (sample trace on the"
        " cluster twin). --cluster: in a pod (or with your kubeconfig). --prometheus-url URL"
        " --forecast-only: the safe first step on a real cluster - forecasts and plans from your"
        " Prometheus and the current kubeconfig, writes nothing (no Lease either), page on"
        " http://127.0.0.1:PORT/.",
    )
    _config_arg(run)
    run.add_argument("--port", type=int, default=8080, help="inspection endpoint TCP port (8080)")
    run.add_argument(
        "--listen", help="address the endpoint binds (127.0.0.1 with --forecast-only, else 0.0.0.0)"
    )
    run.add_argument("--speed", type=float, help="twin: simulated seconds per real second")
    run.add_argument(
        "--duration", type=parse_duration, help="stop after this much real time (e.g. 10m)"
    )
    run.add_argument(
        "--cluster", action="store_true", help="run against a real cluster (in-cluster/kubeconfig)"
    )
    run.add_argument("--kube-host", help="API server URL (default: in-cluster, else kubeconfig)")
    run.add_argument(
        "--prometheus-url",
        help="read demand from this Prometheus (sets source.kind: prometheus and its url)",
    )
    run.add_argument(
        "--forecast-only",
        action="store_true",
        help="every pool forecast-only and dry-run: plans and reports, sends no write at all",
    )

    _add_train_command(sub)

    plan = sub.add_parser(
        "plan", help="print the prewarm plan now, with the reason for every number"
    )
    _config_arg(plan)
    plan.add_argument(
        "--data", type=Path, help="CSV history (timestamp, GPUs) to plan from, not the source"
    )
    plan.add_argument("--pool", help="pool the --data file belongs to (default: the first pool)")

    rp = sub.add_parser("replay", help="what-if of reactive vs predictive prewarming on a trace")
    add_replay_arguments(rp)

    _add_cluster_commands(sub)

    validate = sub.add_parser("validate-config", help="check a config file and exit")
    _config_arg(validate)
    _add_render_commands(sub)

    models = sub.add_parser("models", help="inspect published model artifacts")
    models_sub = models.add_subparsers(dest="models_command", required=True)
    listing = models_sub.add_parser("list", help="versions per pool, * marks the current one")
    _config_arg(listing)
    rollback = models_sub.add_parser(
        "rollback", help="make the previous (or a given) version current"
    )
    _config_arg(rollback)
    rollback.add_argument("--pool", required=True, help="the pool whose model to roll back")
    rollback.add_argument("--to", help="version to make current (default: the one before)")

    bt = sub.add_parser("backtest", help="rolling-origin backtest of models on a CSV series")
    bt.add_argument("--data", type=Path, required=True, help="CSV with timestamp,<value column>")
    bt.add_argument(
        "--horizon",
        type=parse_duration,
        default=900,
        help="how far ahead to forecast, a duration (15m)",
    )
    bt.add_argument(
        "--models",
        default=",".join(known_names()),
        help=f"comma-separated, from {', '.join(known_names())}",
    )
    bt.add_argument("--output", type=Path, help="write every forecast to this CSV")
    bt.add_argument(
        "--value-column", default=DEFAULT_VALUE_COLUMN, help="CSV column of GPUs (gpus_requested)"
    )
    bt.add_argument("--step", type=parse_duration, default=60, help="grid step (default 60s)")
    bt.add_argument("--test", type=parse_duration, default=7 * DAY, help="scored period (7d)")
    bt.add_argument(
        "--train", type=parse_duration, default=14 * DAY, help="training window, a duration (14d)"
    )
    bt.add_argument("--every", type=parse_duration, default=300, help="origin spacing (5m)")
    bt.add_argument("--refit-every", type=parse_duration, default=DAY, help="refit spacing (1d)")
    bt.add_argument("--quantile", type=float, default=0.95, help="target quantile, 0-1 (0.95)")
    bt.add_argument(
        "--tolerance", type=float, default=0.01, help="coverage tolerance, a fraction (0.01)"
    )
    bt.add_argument(
        "--outage-min",
        type=parse_duration,
        default=3600,
        help="runs of zeros this long are outages (1h)",
    )
    return parser


def _add_train_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    train = sub.add_parser("train", help="backtest, select, fit and publish a model per pool")
    _config_arg(train)
    train.add_argument("--pool", action="append", help="only this pool (repeatable)")
    train.add_argument(
        "--pool-index",
        type=int,
        help="only the pool at this position in the config (an Indexed Job passes"
        " $JOB_COMPLETION_INDEX: one pool per index)",
    )
    train.add_argument(
        "--time-budget",
        type=parse_duration,
        default=None,
        metavar="DURATION",
        help="start no pool once the time spent plus the longest pool so far would pass this"
        " (e.g. 110m under a 2 h activeDeadlineSeconds): the rest keep their models and go first"
        " next time",
    )


def _add_render_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``helm-values`` and ``rbac``: what a config becomes in the deploy manifests."""
    values = sub.add_parser(
        "helm-values",
        help="the Helm chart's values from a config file (pools, caps, every other setting)",
    )
    _config_arg(values)
    values.add_argument("--out", type=Path, help="write the values here (default: stdout)")
    rbac = sub.add_parser(
        "rbac",
        help="the daemon's grants that follow a config (NodePools by name, the notice sources'"
        " reads): what deploy/base/config-rbac.yaml holds for Kustomize",
    )
    _config_arg(rbac)


def _add_cluster_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``cleanup``, ``doctor``, ``pause`` and ``resume``: commands that talk to a cluster."""
    # long: argparse declarations, one add_parser/add_argument per command and option
    cleanup = sub.add_parser(
        "cleanup",
        help="uninstall: remove our placeholders and buffers, restore NodePools (needs no"
        " config: finds our objects by label and record; exit 1 if any could not be undone)",
    )
    cleanup.add_argument(
        "--namespace",
        help="forecaster's own namespace: its Lease, and what earlier versions held there"
        " (default: namespace of --config, read without validating the rest, else"
        " $POD_NAMESPACE, else forecaster)",
    )
    cleanup.add_argument(
        "--placeholders-namespace",
        help="where its placeholders and buffers live (default: planning.placeholders.namespace"
        " of --config, else the namespace above plus -placeholders)",
    )
    cleanup.add_argument(
        "--config", type=Path, help="only its namespaces are read; the file need not validate"
    )
    cleanup.add_argument(
        "--kube-host", help="API server URL (default: in-cluster, else kubeconfig)"
    )
    cleanup.add_argument(
        "--expired",
        action="store_true",
        help="only undo what outlived its deadline (NodePool pauses, CapacityBuffers): the"
        " CronJob that bounds our spend when the daemon is gone",
    )

    doctor = sub.add_parser("doctor", help="run the start-up guardrail checks against a cluster")
    _config_arg(doctor)
    doctor.add_argument("--kube-host", help="API server URL (default: in-cluster, else kubeconfig)")
    doctor.add_argument(
        "--at",
        type=parse_instant,
        help="judge Prometheus' history as of this time (ISO 8601, UTC; default: now)",
    )

    hist = sub.add_parser("history", help="a pool's own history from Prometheus")
    hist_sub = hist.add_subparsers(dest="history_command", required=True)
    export = hist_sub.add_parser(
        "export",
        help="the pool's GPU pods (kube-state-metrics; ours left out; the pods of one owner"
        " created together one gang) as a job trace CSV that replay --jobs reads",
    )
    _config_arg(export)
    export.add_argument("--pool", required=True, help="the configured pool (NodePool)")
    export.add_argument("--days", type=int, default=14, help="days of history to read (14)")
    export.add_argument("-o", "--output", type=Path, required=True, help="the CSV to write")
    export.add_argument(
        "--end", type=parse_instant, help="history up to this time (ISO 8601, UTC; default: now)"
    )

    check = sub.add_parser(
        "check-query",
        help="run each pool's PromQL against Prometheus and print what it returns: series,"
        " last value, days of history, gaps of the last day, the server's retention",
    )
    _config_arg(check)
    check.add_argument("--pool", action="append", help="only this pool (repeatable)")
    check.add_argument(
        "--at", type=parse_instant, help="check as of this time (ISO 8601, UTC; default: now)"
    )

    pause = sub.add_parser(
        "pause",
        help="kill switch: the leader withdraws every prewarm within one tick and writes nothing"
        " more until `forecaster resume`",
    )
    _config_arg(pause)
    pause.add_argument("--kube-host", help="API server URL (default: in-cluster, else kubeconfig)")
    pause.add_argument("--reason", required=True, help="why (shown on the page and in logs)")
    pause.add_argument(
        "--force",
        action="store_true",
        help="replace the reason (and who, since) of a pause already on; without it the first"
        " pause's reason is kept",
    )
    resume = sub.add_parser(
        "resume",
        help="turn the kill switch off and give back a Lease `forecaster cleanup` holds:"
        " prewarming resumes",
    )
    _config_arg(resume)
    resume.add_argument("--kube-host", help="API server URL (default: in-cluster, else kubeconfig)")
    resume.add_argument(
        "--reset-state",
        action="store_true",
        help="also write a fresh state (a new daily GPU-hours budget): only when the daemon"
        " refuses a lost or unreadable state and you accept starting over",
    )


def _config_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help=f"YAML config (default: {DEFAULT_CONFIG}, else the bundled one)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not args.verbose:  # its retry warnings repeat what our one-line error says
        logging.getLogger("urllib3").setLevel(logging.ERROR)
    from threadpoolctl import threadpool_limits

    from forecaster.cli import oneshot

    previous = _handle_signals()
    try:
        if args.command in oneshot.ONE_SHOT:  # no model library loaded: answers at once
            return oneshot.dispatch(args)
        from forecaster.cli.commands import dispatch

        with threadpool_limits(limits=1):  # 2-core machines: BLAS threads only contend
            return dispatch(args)
    except ForecasterError as exc:
        print(f"forecaster: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("forecaster: interrupted", file=sys.stderr)
        return 130
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        logging.disable(logging.NOTSET)


def _handle_signals() -> dict[int, Any]:
    """Install ``_interrupted`` and ``_terminated`` (main thread only); the handlers before."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {
        signal.SIGINT: signal.signal(signal.SIGINT, _interrupted),
        signal.SIGTERM: signal.signal(signal.SIGTERM, _terminated),
    }


def _interrupted(signum: int, frame: object) -> None:
    """Ctrl-C: quiet the shutdown's own log lines (the work stops where it is; what finished is
    kept) and unwind, so ``main`` says it in one line and exits 130 - no traceback."""
    logging.disable(logging.WARNING)
    raise KeyboardInterrupt


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM (a pod being stopped): unwind like Ctrl-C, so ``finally`` blocks run - the
    scheduler waits for its tick and the Lease is released - but keep the shutdown's logs."""
    raise SystemExit(128 + signum)
