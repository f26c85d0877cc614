"""The one-shot commands an operator runs at the terminal: ``pause``, ``resume``, ``doctor``,
``check-query``, ``validate-config``, ``helm-values``, ``rbac``, ``cleanup`` and ``history
export``.

They load no model library (prophet, statsmodels, scikit-learn, pandas, matplotlib): a kill
switch answers in about a second (``tests/cli/test_one_shot_imports.py``,
``bench/performance/cli_startup.py``). Everything they need is ``app.connect``, ``app.doctor``,
``app.cleanup``, ``app.takeover`` and ``app.history``.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from forecaster.actuators.coordination.control import CONTROL_CONFIG_MAP
from forecaster.actuators.guardrails import Guardrail
from forecaster.app import cleanup, connect, doctor, history, takeover
from forecaster.cli import rbac
from forecaster.cli.config_paths import (
    BUNDLED_CONFIG,
    DEFAULT_CONFIG,
    PLACEHOLDERS_SUFFIX,
    namespaces_of,
)
from forecaster.cli.helm_values import helm_values
from forecaster.cli.query_report import query_check_report
from forecaster.core.actions import Halt
from forecaster.core.series import iso_utc
from forecaster.errors import ConfigError, DataError, SourceError
from forecaster.service.clock import SystemClock
from forecaster.settings import Settings, load_settings

ONE_SHOT = frozenset(
    {
        "pause",
        "resume",
        "doctor",
        "check-query",
        "validate-config",
        "helm-values",
        "rbac",
        "cleanup",
        "history",
    }
)


def dispatch(args: argparse.Namespace) -> int:
    """Run one of ``ONE_SHOT``; ``ForecasterError`` propagates to ``cli.main``."""
    if args.command == "cleanup":
        return _cleanup(args)
    if args.command == "helm-values":
        return _helm_values(args)
    if args.command == "rbac":
        settings = load_settings(config_path(args.config))  # a bad file fails, naming its field
        sys.stdout.write(rbac.dump(rbac.config_rbac(settings), header=rbac.KUSTOMIZE_HEADER))
        return 0
    handlers: dict[str, Callable[[Settings, argparse.Namespace], int]] = {
        "validate-config": _validate,
        "doctor": _doctor,
        "check-query": _check_query,
        "pause": _switch,
        "resume": _switch,
        "history": _history_export,
    }
    return handlers[args.command](settings_from(args.config), args)


def _cleanup(args: argparse.Namespace) -> int:
    """Withdraw everything forecaster changed in the cluster; idempotent. Needs no config: the
    namespaces come from ``--namespace`` and ``--placeholders-namespace`` (what the shipped
    Jobs pass)."""
    kube = connect.connect_writer(host=args.kube_host)
    own, placeholders = namespaces_of(args.config)
    namespace = args.namespace or own
    if args.placeholders_namespace:
        placeholders = args.placeholders_namespace
    elif args.namespace:
        placeholders = args.namespace + PLACEHOLDERS_SUFFIX
    if args.expired:
        now = int(SystemClock().now().timestamp())
        undone = cleanup.expire(kube, namespace=namespace, placeholders=placeholders, now=now)
    else:
        undone = cleanup.cleanup(kube, namespace=namespace, placeholders=placeholders)
    for line in undone.changed:
        print(line)
    for line in undone.failed:
        print(f"FAILED {line}", file=sys.stderr)
    changed = f"{len(undone.changed)} change(s) undone" if undone.changed else "nothing to undo"
    if undone.failed:
        print(f"cleanup: {changed}; {len(undone.failed)} object(s) could not be undone (above)")
        return 1
    print(f"cleanup: {changed}")
    return 0


def _history_export(settings: Settings, args: argparse.Namespace) -> int:
    """``history export``: the pool's pods in Prometheus as a job trace ``replay`` reads."""
    end = args.end if args.end is not None else int(SystemClock().now().timestamp())
    found = history.read_history(settings, pool=args.pool, days=args.days, end=end)
    found.write_trace(args.output)
    print(found.said())
    try:
        split = history.windows(found.days, frontier=False)
    except DataError as exc:
        print(f"wrote {args.output}; too short to replay: {exc}")
        return 0
    config = f" --config {args.config}" if args.config else ""
    print(
        f"wrote {args.output} (seconds since {iso_utc(found.start)}); replay it with: forecaster"
        f" replay{config} --pool {args.pool} --jobs {args.output} --epoch {iso_utc(found.start)}"
        f" --start-day 0 --warmup-days {split.warmup} --end-day {split.days}"
    )
    return 0


QUERY_ERRORS = {"bad-query", "no-demand-metric", "no-series"}
"""Findings that make ``check-query`` exit 1: the pool has no usable demand history."""


def _check_query(settings: Settings, args: argparse.Namespace) -> int:
    """Each pool's query as Prometheus answers it; exit 1 when a query is unusable."""
    now = args.at if args.at is not None else int(SystemClock().now().timestamp())
    retention, checks = doctor.check_queries(
        settings, connect.build_source(settings), pools=args.pool, now=now
    )
    for line in query_check_report(
        settings.source.prometheus.url, retention, checks=checks, now=now
    ):
        print(line)
    findings = doctor.history_findings(settings, retention, checks=checks, now=now)
    for finding in findings:
        where = f" [{finding.pool}]" if finding.pool else ""
        level = "ERROR" if finding.code in QUERY_ERRORS else "WARN"
        print(f"{level} {finding.code}{where}: {finding.message}")
    return 1 if any(f.code in QUERY_ERRORS for f in findings) else 0


def _switch(settings: Settings, args: argparse.Namespace) -> int:
    """``pause`` / ``resume``: set the kill switch the leader reads every tick."""
    kube = connect.connect(settings.model_copy(update={"dry_run": False}), host=args.kube_host)
    control = connect.control(settings, kube)
    where = f"ConfigMap {control.namespace}/{CONTROL_CONFIG_MAP}"
    halt = None
    if args.command == "pause":
        earlier = control.read()
        if earlier is not None and not args.force:  # one incident's reason is not overwritten
            since = iso_utc(earlier.since) if earlier.since else "an unknown time"
            print(
                f"already paused ({where}) by {earlier.by or 'someone'} since {since}:"
                f" {earlier.reason}; kept (--force replaces the reason)"
            )
            return 0
        now = int(SystemClock().now().timestamp())
        halt = Halt(reason=args.reason, by=_who(), since=now)
    changed = control.set(halt)
    every = settings.reconcile_every_seconds
    if halt is not None:
        print(
            f"paused ({where}{'' if changed else ', already set'}): the leader withdraws every"
            f" prewarm within one tick ({every} s) and writes nothing more until"
            " `forecaster resume`"
        )
    else:
        print(f"resumed ({where}{'' if changed else ', already clear'}): prewarming resumes")
        now = int(SystemClock().now().timestamp())
        for line in takeover.give_back(settings, kube, reset_state=args.reset_state, now=now):
            print(line)
    return 0


def _who() -> str:
    """Who runs the command (a container may have no user entry)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


DOCTOR_CHECKS = {
    "guardrails-unavailable": "the API server answered the checks",
    "cluster-autoscaler": "no Cluster Autoscaler beside Karpenter",
    "nodepool-missing": "every configured NodePool exists",
    "nodepool-unreadable": "every configured NodePool can be read",
    "nodepool-grant": "the daemon's NodePool grant names every configured pool (if installed)",
    "nodepool-grant-unchecked": "the daemon's NodePool grant could be read",
    "nodepool-unlimited": "every NodePool has a limit on its pool's accelerator resource",
    "unprotected-gpu-workloads": "GPU workloads are protected from consolidation",
    "lead-time": "forecast horizons cover the image pulls",
    "lead-longer-than-configured": "measured launches fit the configured lead times",
    "image-pull-dominates": "image pulls do not dominate the lead",
    "prometheus-unreachable": "Prometheus answers",
    "short-retention": "Prometheus keeps enough history to train on",
    "bad-query": "every pool's query runs",
    "no-demand-metric": "a demand history exists for every pool",
    "no-series": "every pool's query returns one series",
    "no-bootstrap": "history from before the daemon ran (kube_pod_nodeselectors)",
    "short-history": "every pool has enough history to train",
    "no-pod-history": "the pod history the operating point replays",
}
"""Every check ``doctor`` runs, in order, with what an OK line says (``actuators.guardrails``
and ``app.doctor`` describe them)."""

PROMETHEUS_CHECKS = frozenset(list(DOCTOR_CHECKS)[8:])
"""Checks of the history, run only when the config reads Prometheus."""

DOCTOR_ERRORS = QUERY_ERRORS | {
    "guardrails-unavailable",
    "nodepool-missing",
    "nodepool-unreadable",
    "nodepool-grant",
    "prometheus-unreachable",
}
"""Findings that make ``doctor`` exit 1: forecaster cannot work as configured. The rest are
warnings (exit 0): it works, less well or less safely than it could."""


def _doctor(settings: Settings, args: argparse.Namespace) -> int:
    """Every check once: an OK line, or one line per finding (ERROR or WARN); exit 1 on errors."""
    kube = connect.connect(settings, host=args.kube_host)
    now = int(SystemClock().now().timestamp())
    for line in [
        *doctor.unit_lines(settings),
        *doctor.backend_lines(settings, kube),
        *doctor.notice_lines(settings, kube, now=now),
        *doctor.namespace_lines(settings, kube, now=now),
        *doctor.claim_lines(kube),
    ]:
        print(line)
    findings = doctor.run_guardrails(settings, kube, now=now, log_findings=False)
    findings += doctor.grant_findings(settings, kube)
    now = args.at if args.at is not None else now  # the history's checks
    checks = dict(DOCTOR_CHECKS)
    if settings.source.kind == "prometheus":  # the history training will read
        try:
            source = connect.build_source(settings)
            retention, queried = doctor.check_queries(settings, source, pools=None, now=now)
        except SourceError as exc:
            findings.append(Guardrail("prometheus-unreachable", None, str(exc)))
        else:
            findings += doctor.history_findings(settings, retention, checks=queried, now=now)
            print(doctor.announced_history_line(source, now=now))
            print(doctor.claimed_history_line(source, now=now))
    else:
        checks = {code: text for code, text in checks.items() if code not in PROMETHEUS_CHECKS}
    unique = list(dict.fromkeys(findings))
    for code, text in checks.items():
        mine = [f for f in unique if f.code == code]
        for finding in mine:
            where = f" [{finding.pool}]" if finding.pool else ""
            level = "ERROR" if code in DOCTOR_ERRORS else "WARN"
            print(f"{level} {code}{where}: {finding.message}")
        if not mine:
            print(f"OK {code}: {text}")
    for finding in unique:
        if finding.code not in checks:  # a check added without its line above
            print(f"WARN {finding.code}: {finding.message}")
    errors = sum(f.code in DOCTOR_ERRORS for f in unique)
    print(
        f"doctor: {len(settings.pools)} pool(s), {errors} error(s),"
        f" {len(unique) - errors} warning(s)"
    )
    return 1 if errors else 0


def _validate(settings: Settings, args: argparse.Namespace) -> int:
    if settings.source.kind == "csv":
        missing = [
            f"pools.{i}.csv: {p.csv} does not exist"
            for i, p in enumerate(settings.pools)
            if p.csv is not None and not p.csv.exists()
        ]
        if missing:
            raise ConfigError("; ".join(missing))
    names = ", ".join(p.name for p in settings.pools)
    print(f"config OK: {len(settings.pools)} pool(s): {names}")
    return 0


def _helm_values(args: argparse.Namespace) -> int:
    """Validate the config as the daemon would, then write it as the chart's values."""
    path = config_path(args.config)
    load_settings(path)  # a bad file fails here, naming its field, before any values exist
    mapped = helm_values(yaml.safe_load(path.read_text()) or {})
    text = f"# Helm values from {path} (forecaster helm-values)\n" + yaml.safe_dump(
        mapped.values, sort_keys=False
    )
    for note in mapped.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text)
        print(f"wrote {args.out}: {len(mapped.values['pools'])} pool(s)", file=sys.stderr)
    return 0


def config_path(path: Path | None) -> Path:
    """``path``, else ./forecaster.yaml, else the bundled default; it must exist."""
    if path is None:
        path = DEFAULT_CONFIG if DEFAULT_CONFIG.exists() else BUNDLED_CONFIG
    if not path.exists():
        raise ConfigError(f"{path}: config file not found")
    return path


def settings_from(path: Path | None) -> Settings:
    """The config at ``path``, else ./forecaster.yaml, else the bundled default."""
    return load_settings(config_path(path))
