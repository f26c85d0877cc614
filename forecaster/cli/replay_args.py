"""The ``replay`` subcommand's flags (the command itself: ``cli.replay``)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from forecaster.durations import parse_duration
from forecaster.simulation.declared_notice import NoticeMix
from forecaster.simulation.policies import POLICY_NAMES
from forecaster.simulation.pool import SAMPLE_TRACE_EPOCH, SimulatedPool

_POOL = SimulatedPool()
POOL_DEFAULTS: dict[str, object] = {
    "gpus_per_node": _POOL.gpus_per_node,
    "provision": _POOL.provision_seconds,
    "image_pull": _POOL.image_pull_seconds,
    "decide_every": _POOL.decide_every_seconds,
    "wake_every": _POOL.wake_seconds,
    "max_prewarm_gpus": _POOL.max_prewarm_gpus,
    "quantile": _POOL.quantile,
    "floor_gpus": _POOL.floor_gpus,
    "price": _POOL.price_on_demand,
    "spot_price": _POOL.price_spot,
    "backend": _POOL.backend,
}
"""Flags that describe the pool, with their defaults; with ``--config`` the configured pool
describes it instead, and a flag moved off its default is refused."""
EPOCH_DEFAULT = SAMPLE_TRACE_EPOCH


def parse_instant(text: str) -> int:
    """An ISO 8601 time as epoch seconds (UTC unless it says otherwise)."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"bad time {text!r} (use e.g. 2026-11-30T12:00Z)") from exc
    return int(moment.replace(tzinfo=moment.tzinfo or UTC).timestamp())


def add_replay_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``replay`` subcommand's options."""
    # long: argparse declarations, one add_argument per option
    parser.add_argument(
        "--config",
        type=Path,
        help="replay the twin's pool (twin.pool) exactly as this configured daemon runs it:"
        " its policy, caps, SLO, horizon, quantile and reconcile interval; the trace and epoch"
        " default to twin.jobs and twin.epoch",
    )
    parser.add_argument(
        "--pool",
        help="with --config: replay this configured pool (default: twin.pool); with --days its"
        " own history",
    )
    parser.add_argument(
        "--days",
        type=int,
        help="with --config and --pool: replay the pool's last DAYS of pods from Prometheus"
        " (kube-state-metrics), split into warm-up, tuned and judged days (--frontier needs"
        " 14, a plain replay 3)",
    )
    parser.add_argument(
        "--end",
        type=parse_instant,
        help="with --days: history up to this time (ISO 8601, UTC; default: now)",
    )
    parser.add_argument(
        "--jobs",
        type=Path,
        help="job trace CSV: job_id,submission_time,duration,num_gpu (seconds, GPUs)",
    )
    parser.add_argument(
        "--series", type=Path, help="or a per-minute demand CSV of GPUs (1-GPU pods)"
    )
    parser.add_argument(
        "--policy",
        default=",".join(POLICY_NAMES),
        help="comma-separated; static:K, burst:ALPHA and continuation:GAP too (its floor:"
        " --floor-gpus)",
    )
    parser.add_argument(
        "--sweep", default="", help="static headrooms to sweep, GPUs, e.g. 0,16,32,64,96"
    )
    parser.add_argument(
        "--static-gpus", type=int, default=64, help="K (GPUs) of the plain 'static' policy (64)"
    )
    parser.add_argument("--report", type=Path, help="write the HTML report here")
    parser.add_argument("--json", type=Path, help="write the figures per policy as JSON here")
    parser.add_argument(
        "--epoch", default=EPOCH_DEFAULT, help="wall time of trace second 0 (ISO 8601)"
    )
    parser.add_argument(
        "--start-day", type=float, default=0.0, help="replay from this trace day (days, 0)"
    )
    parser.add_argument(
        "--warmup-days",
        type=float,
        default=10.0,
        help="days simulated first, excluded from metrics (10)",
    )
    parser.add_argument(
        "--end-day", type=float, default=50.0, help="replay up to this trace day (days, 50)"
    )
    parser.add_argument(
        "--gpus-per-node",
        type=int,
        default=POOL_DEFAULTS["gpus_per_node"],
        help="GPUs of one node (8)",
    )
    parser.add_argument(
        "--provision",
        type=parse_duration,
        default=POOL_DEFAULTS["provision"],
        help="node launch to Ready (60s)",
    )
    parser.add_argument(
        "--image-pull",
        type=parse_duration,
        default=POOL_DEFAULTS["image_pull"],
        help="workload image pull (5m)",
    )
    parser.add_argument(
        "--decide-every",
        type=parse_duration,
        default=POOL_DEFAULTS["decide_every"],
        help="every policy decides this often - the daemon's reconcile_every_seconds (15s)",
    )
    parser.add_argument(
        "--wake-every",
        type=parse_duration,
        default=POOL_DEFAULTS["wake_every"],
        help="a new pod also wakes a decision, this long after the previous one at the soonest"
        " - the daemon's pod watch (watch_pods: true; 2s); 0: decide only every --decide-every",
    )
    parser.add_argument(
        "--consolidate-after",
        type=parse_duration,
        default=_POOL.consolidate_after_seconds,
        help="Karpenter removes a node empty this long (5m)",
    )
    parser.add_argument(
        "--max-prewarm-gpus",
        type=int,
        default=POOL_DEFAULTS["max_prewarm_gpus"],
        help="planner cap and breach line, GPUs (1024)",
    )
    parser.add_argument(
        "--model", default=_POOL.model, help="predictive policy's model (quantreg-raw)"
    )
    parser.add_argument(
        "--quantile",
        type=float,
        default=POOL_DEFAULTS["quantile"],
        help="forecast quantile the predictive plans for (0.95)",
    )
    parser.add_argument(
        "--floor-gpus",
        type=int,
        default=POOL_DEFAULTS["floor_gpus"],
        help="GPUs the predictive keeps warm whatever its forecast says, whole nodes (0)",
    )
    parser.add_argument("--no-warm-image", action="store_true", help="placeholders run pause only")
    parser.add_argument(
        "--image-pull-sweep",
        default="",
        metavar="SECONDS,...",
        help="also run the policies at each of these image-pull times, seconds, and print how"
        " waiting and GPU-hours move with the lead time (e.g. 0,60,300)",
    )
    parser.add_argument(
        "--backend",
        default=_POOL.backend,
        help="how prewarm is held: placeholders (pods, preempted), capacitybuffer (refills) or"
        " another registered backend (as it declares)",
    )
    parser.add_argument(
        "--frontier",
        action="store_true",
        help="sweep static K and predictive's quantile; choose on --tune-days, judge on"
        " --eval-days",
    )
    parser.add_argument(
        "--bounds",
        action="store_true",
        help="with --frontier: also sweep the continuation bounds (how far reading bursts"
        " could go; 16 more replays)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="with --frontier: replays run at once, each in a process of its own (the same"
        " figures; default: the CPUs this process may use)",
    )
    parser.add_argument(
        "--tune-days",
        default="10-30",
        help="tuning window in trace days, FROM-TO (with --frontier; 10-30)",
    )
    parser.add_argument(
        "--eval-days",
        default="30-50",
        help="evaluation window in trace days, FROM-TO (with --frontier; 30-50)",
    )
    parser.add_argument(
        "--kueue-quota-gpus",
        type=int,
        default=None,
        help="Kueue admits at most this many GPUs at once; the rest wait as workloads",
    )
    parser.add_argument(
        "--kueue-notice",
        type=parse_duration,
        default=0,
        help="each job's Kueue workload holds quota this long before its pods exist (e.g. an"
        " admission check): the planner counts it as reserved demand; measures what notice of"
        " queued work buys (0: none)",
    )
    parser.add_argument(
        "--notice",
        type=_notice_mix,
        default=None,
        help="declared notice, simulated: e.g. cron=15%%:1d,pipeline=15%%:2m-15m,seed=1 - whole"
        " submissions drawn (seeded) until each share of GPU-hours is announced by a CronJob due"
        " at their submission (visible P ahead), a JobSet stage waiting A-B on an"
        " initializer, or (queue=S:A-B) a Kueue workload pending A-B until quota frees; the"
        " daemon's own notice sources read them from the twin (static reads nothing)",
    )
    parser.add_argument(
        "--price",
        type=float,
        default=POOL_DEFAULTS["price"],
        help="on-demand $ per GPU-hour (4.10)",
    )
    parser.add_argument(
        "--spot-price",
        type=float,
        default=POOL_DEFAULTS["spot_price"],
        help="spot $ per GPU-hour (1.60)",
    )


def _notice_mix(text: str) -> NoticeMix:
    try:
        return NoticeMix.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
