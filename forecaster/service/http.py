"""Read-only inspection API and page (FastAPI; served by uvicorn).

``GET /api/v1/forecast?pool=`` actual history, P50 and the planned upper quantile (``upper``,
``upper_quantile``) over the horizons, prewarm trail, model;
``/api/v1/plan`` the last plan with the reason for every number; ``/api/v1/status`` mode and
budgets per pool; ``/metrics``; ``/healthz``; ``/readyz`` (503 until the first tick); ``/``
a page charting actual demand against the forecast and the prewarm (no CDN: the drawing code is
inline). The OpenAPI document is at ``/openapi.json``. Nothing here writes anything.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from typing import Annotated, Any

import numpy as np
from fastapi import FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse, JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel

from forecaster import __version__
from forecaster.accelerators import unit_of
from forecaster.core.actions import Halt
from forecaster.core.cluster import ARRIVAL_WINDOWS_SECONDS, MeasuredLead
from forecaster.core.error_budget import (
    ErrorBudgetState,
    Transition,
    budget_remaining,
    waste_last_day,
)
from forecaster.core.finops import PoolSpend
from forecaster.core.kueue import KueueRoom
from forecaster.core.notice import AnnouncedItem, NamespaceNotice, SourceStatus
from forecaster.core.notice_use import KINDS, PoolNotice
from forecaster.core.planner import Mode
from forecaster.core.policy import PlanningHorizon
from forecaster.core.series import iso_utc
from forecaster.durations import DAY
from forecaster.errors import ConfigError
from forecaster.reconcile.records import PoolView, TickRecord
from forecaster.service.daemon import Daemon, TrailPoint
from forecaster.service.page import PAGE

PoolQuery = Annotated[
    str,
    Query(
        min_length=1,
        max_length=63,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="NodePool name",
    ),
]
HISTORY_SECONDS = DAY


class Problem(BaseModel):
    """An error: what was wrong with the request, or why there is nothing to show yet."""

    detail: str


NOT_READY: dict[int | str, dict[str, Any]] = {
    503: {"model": Problem, "description": "no reconcile tick has completed yet"}
}
UNKNOWN_POOL: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "the pool is not configured"}
}


def create_app(daemon: Daemon) -> FastAPI:
    """The inspection app over one daemon."""
    # long: route registration; each route's body is a function of its own
    app = FastAPI(
        title="forecaster",
        version=__version__,
        description="Read-only view of GPU demand forecasts, prewarm plans and budgets.",
        docs_url=None,  # Swagger UI and ReDoc load their code from a CDN: serve nothing external
        redoc_url=None,
    )

    def record_or_503() -> Any:
        if daemon.last is None:
            raise HTTPException(status_code=503, detail="no reconcile tick has completed yet")
        return daemon.last

    def known(pool: str) -> None:
        if pool not in daemon.pools:
            raise HTTPException(
                status_code=404, detail=f"unknown pool {pool!r}; known: {list(daemon.pools)}"
            )

    @app.get(
        "/healthz",
        summary="the process is alive and its reconcile loop makes progress",
        responses={503: {"description": "no tick has completed for too long (stuck)"}},
    )
    def healthz() -> JSONResponse:
        if daemon.stuck():
            return JSONResponse({"status": "stuck"}, status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get("/readyz", summary="a reconcile tick has completed", responses=NOT_READY)
    def readyz() -> JSONResponse:
        if not daemon.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ready"})

    @app.get("/metrics", summary="Prometheus metrics", response_class=Response)
    def metrics() -> Response:
        return Response(generate_latest(daemon.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get(
        "/api/v1/forecast",
        summary="actual demand, P50 and upper-quantile forecast and prewarm of one pool",
        responses={**NOT_READY, **UNKNOWN_POOL},
    )
    def forecast(pool: PoolQuery) -> dict[str, Any]:
        known(pool)
        record = record_or_503()
        view = record.pools[pool]
        history: dict[str, list[Any]] = {"timestamps": [], "gpus": []}
        if view.history is not None:
            part = view.history.window(record.at - HISTORY_SECONDS, record.at + 1)
            step = max(1, 300 // part.step_seconds)
            ts, values = part.timestamps[::step], part.values[::step]
            history = {
                "timestamps": [iso_utc(int(t)) for t in ts],
                "gpus": [None if not np.isfinite(v) else float(v) for v in values],
            }
        predicted: dict[str, Any] | None = None
        if view.forecast is not None:
            f = view.forecast
            origin = int(f.origins[0])
            predicted = {
                "origin": iso_utc(origin),
                "horizons_seconds": list(f.horizons_seconds),
                "target_times": [iso_utc(origin + h) for h in f.horizons_seconds],
                "p50": [float(v) for v in f.values_at_origin(0, quantile=0.5)],
                "upper_quantile": view.quantile,  # the quantile the plan prewarms for
                "upper": [float(v) for v in f.values_at_origin(0, quantile=view.quantile)],
            }
        trail = [p for p in daemon.trail_points() if pool in p.prewarm_gpus]
        return {
            "pool": pool,
            "generated_at": iso_utc(record.at),
            "model": view.model,
            "model_version": view.model_version,
            "history": history,
            "forecast": predicted,
            "prewarm": {
                "timestamps": [iso_utc(p.at) for p in trail],
                "gpus": [p.prewarm_gpus[pool] for p in trail],
            },
            "data_quality": list(view.quality),
        }

    @app.get(
        "/api/v1/history",
        summary="the last day of one pool: past forecasts against what happened, the error and"
        " waste budgets, hand-off episodes, prewarm held",
        responses={**NOT_READY, **UNKNOWN_POOL},
    )
    def history(pool: PoolQuery) -> dict[str, Any]:
        known(pool)
        record = record_or_503()
        trail = [p for p in daemon.trail_points() if pool in p.modes]
        scored = daemon.scored_for(pool)
        return {
            "pool": pool,
            "generated_at": iso_utc(record.at),
            "timestamps": [iso_utc(p.at) for p in trail],
            "mode": [p.modes[pool] for p in trail],
            "prewarm_gpus": [p.prewarm_gpus.get(pool, 0) for p in trail],
            "held_gpus": [
                p.spend[pool].billed_prewarm_gpus if pool in p.spend else None for p in trail
            ],
            "error_budget_remaining": [p.budget_remaining.get(pool) for p in trail],
            "waste_gpu_hours_24h": [p.waste_gpu_hours.get(pool) for p in trail],
            "max_waste_gpu_hours_per_day": daemon.reconciler.slo_for(
                pool
            ).max_waste_gpu_hours_per_day,
            "forecasts": {  # each target time: the upper quantile forecast then, and the outcome
                "target_times": [iso_utc(e.target_time) for e in scored],
                "upper": [e.upper_gpus for e in scored],
                "actual": [e.actual_gpus for e in scored],
                "missed": [e.exceeded for e in scored],
                "quantile": record.pools[pool].quantile,
            },
            "episodes": _episodes(trail, pool, daemon.transition_list()),
        }

    @app.get(
        "/api/v1/plan",
        summary="the last plan, with the reason for every number",
        responses=NOT_READY,
    )
    def plan() -> dict[str, Any]:
        record = record_or_503()
        decision = record.plan
        return {
            "at": iso_utc(decision.at),
            "cost_per_hour": decision.cost_per_hour,
            "gpu_hours_spent_last_day": decision.gpu_hours_spent_last_day,
            "total_target_gpus": decision.total_target_gpus,
            "reasons": list(decision.reasons),
            "pools": [
                {
                    "pool": p.pool,
                    "mode": p.mode.value,
                    "acts": p.acts,
                    "demand_upper_gpus": None
                    if not np.isfinite(p.demand_upper_gpus)
                    else p.demand_upper_gpus,
                    "real_demand_gpus": p.real_demand_gpus,
                    "spare_gpus": p.spare_gpus,
                    "needed_gpus": p.needed_gpus,
                    "target_gpus": p.target_gpus,
                    "placeholders": p.placeholders,
                    "placeholder_size_gpus": p.placeholder_size_gpus,
                    "protect_nodepool": p.protect_nodepool,
                    "reasons": list(p.reasons),
                }
                for p in decision.pools
            ],
        }

    @app.get("/api/v1/status", summary="mode, budgets and warnings per pool")
    def status() -> dict[str, Any]:
        record = daemon.last
        pools = {name: _pool_status(daemon, name, record) for name in daemon.pools}
        return {
            "version": __version__,
            "leader": daemon.is_leader(),
            "not_acting": None if daemon.is_leader() else daemon.not_acting(),
            "ready": daemon.ready,
            "ticks": daemon.ticks,
            "last_tick": iso_utc(record.at) if record else None,
            "halted": _halt(record.halt) if record else None,
            "unattributed_pending": [
                {"namespace": u.namespace, "pods": u.pods, "gpus": u.gpus}
                for u in (record.unattributed if record else ())
            ],
            "dra_claim_pods": [
                {"namespace": c.namespace, "pool": c.pool, "pods": c.pods, "note": c.NOT_PREWARMED}
                for c in (record.claimed if record else ())
            ],
            "notice_sources": [_notice_source(n) for n in (record.notice if record else ())],
            "notice_namespaces": [
                _namespace_notice(n) for n in (record.notice_namespaces if record else ())
            ],
            "pools": pools,
            "budgets": {
                "prewarm_gpus": record.plan.total_target_gpus if record else 0,
                "cost_per_hour": record.plan.cost_per_hour if record else 0.0,
                "gpu_hours_spent_last_day": record.plan.gpu_hours_spent_last_day if record else 0.0,
                "max_prewarm_gpu_hours_per_day": (
                    daemon.reconciler.effective_budgets().max_prewarm_gpu_hours_per_day
                ),
            },
            "finops": _finops_total([daemon.spend(name) for name in daemon.pools]),
            "guardrails": list(daemon.guardrails),
            "errors": [
                {"kind": e.kind, "pool": e.pool, "message": e.message}
                for e in (record.errors if record else ())
            ],
        }

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        return HTMLResponse(PAGE.replace("__POOLS__", ",".join(daemon.pools)))

    return app


def _pool_status(daemon: Daemon, name: str, record: TickRecord | None) -> dict[str, Any]:
    """One pool in ``/status``: its mode, budget, model, backend, notice, lead and errors -
    read from the last tick's published record, never from the loop's live state."""
    actuation = record.actuation if record else None  # None on followers
    budget = record.budget(name) if record else ErrorBudgetState()  # before the first tick
    view = record.pools.get(name) if record else None
    plan_mode = (
        next((p.mode.value for p in record.plan.pools if p.pool == name), None) if record else None
    )
    now = record.at if record else budget.since
    return {
        "mode": plan_mode or budget.mode.value,
        "resource": daemon.resource(name),
        "unit": unit_of(daemon.resource(name)),
        "since": iso_utc(budget.since) if budget.since else None,
        "reason": budget.reason,
        "error_budget_remaining": budget_remaining(
            budget, daemon.reconciler.slo_for(name), now=now
        ),
        "waste_gpu_hours_24h": waste_last_day(budget, now=now),
        "model": view.model if view else None,
        "model_version": view.model_version if view else None,
        "backend": actuation.backend.get(name) if actuation else None,
        "buffer": actuation.buffer_status.get(name) if actuation else None,
        "kueue": _kueue(view.snapshot.kueue if view and view.snapshot else None),
        "launch_problem": view.snapshot.launch_problem if view and view.snapshot else None,
        "signals": dict(view.snapshot.signals) if view and view.snapshot else {},
        "announced": [
            _announced(item, now=now)
            for item in (view.snapshot.announced if view and view.snapshot else ())
        ],
        "notice_7d": [
            _pool_notice(n) for n in (record.notice_pools if record else ()) if n.pool == name
        ],
        "prewarm_gpus": next((p.target_gpus for p in record.plan.pools if p.pool == name), 0)
        if record
        else 0,
        "finops": _finops(daemon.spend(name)),
        "prewarm_ready_gpus": (
            view.snapshot.ready_placeholder_gpus if view and view.snapshot else None
        ),
        "lead": _lead(
            daemon.lead_seconds(name),
            view.snapshot.measured_lead if view and view.snapshot else None,
            view.horizon if view else None,
        ),
        "plan_demand": _plan_demand(view),
        "operating_point": (
            view.operating_point.to_dict() if view and view.operating_point else None
        ),
        "errors": [
            f"{e.kind}: {e.message}" for e in (record.errors if record else ()) if e.pool == name
        ],
    }


def _notice_source(n: SourceStatus) -> dict[str, Any]:
    """A notice source in ``/status``: installed, read, and how its announcements fared."""
    return {
        "source": n.source,
        "installed": n.installed,
        "items": n.items,
        "problem": n.problem,
        "precision_7d": n.precision,
        "resolved_7d": n.resolved,
        "waste_gpu_hours_7d": round(n.waste_gpu_hours, 3),
        "trusted": n.trusted,
        "distrusted_namespaces": list(n.distrusted_namespaces),
        "dropped_items": n.dropped,
        "came_gpus_7d": n.came_gpus,
        "ahead_gpus_7d": n.ahead_gpus,
        "median_notice_seconds_7d": n.median_notice_seconds,
    }


def _namespace_notice(n: NamespaceNotice) -> dict[str, Any]:
    """A namespace whose announced work held prewarm in 7 days: whom notice serves, at what
    cost (the top ten by GPU-hours held)."""
    return {
        "namespace": n.namespace,
        "resolved_7d": n.resolved,
        "precision_7d": round(n.precision, 3),
        "held_gpu_hours_7d": round(n.held_gpu_hours, 3),
        "waste_gpu_hours_7d": round(n.waste_gpu_hours, 3),
    }


def _pool_notice(n: PoolNotice) -> dict[str, Any]:
    """One source's announced work on a pool over 7 days: GPU-hours its pods ran by the notice
    their item gave, the pool's, the share that came with notice >= the lead time, precision
    and the notice spread (``core.notice_use``)."""
    share = n.ahead_share
    return {
        "source": n.source,
        "gpu_hours": {kind: round(n.gpu_hours.get(kind, 0.0), 3) for kind in KINDS},
        "pool_gpu_hours": round(n.pool_gpu_hours, 3),
        "ahead_share": None if share is None else round(share, 4),
        "precision": n.precision,
        "resolved": n.resolved,
        "notice_seconds_p10_p50_p90": list(n.notice_seconds) if n.notice_seconds else None,
    }


def _finops(spend: PoolSpend) -> dict[str, Any]:
    """The pool's last day of spend (``core.finops``), rounded for people."""
    per_used = spend.cost_per_used_gpu_hour
    return {
        "gpu_hours_24h": round(spend.node_gpu_hours, 2),
        "used_gpu_hours_24h": round(spend.used_gpu_hours, 2),
        "prewarm_gpu_hours_24h": round(spend.prewarm_gpu_hours, 2),
        "prewarm_wasted_gpu_hours_24h": round(spend.wasted_gpu_hours, 2),
        "prewarm_cost_24h": round(spend.prewarm_cost, 2),
        "prewarm_used_cost_24h": round(spend.used_prewarm_cost, 2),
        "prewarm_wasted_cost_24h": round(spend.wasted_cost, 2),
        "node_cost_24h": round(spend.node_cost, 2),
        "cost_per_used_gpu_hour": None if per_used is None else round(per_used, 3),
        "prewarm_taken_gpus_24h": spend.used_prewarm_gpus,
        "wait_removed_gpu_minutes_24h_estimate": round(spend.wait_removed_gpu_minutes, 1),
    }


def _finops_total(spends: list[PoolSpend]) -> dict[str, Any]:
    """The cluster's last day: every pool's spend added up."""
    used = sum(x.used_gpu_hours for x in spends)
    nodes = sum(x.node_cost for x in spends)
    return {
        "prewarm_cost_24h": round(sum(x.prewarm_cost for x in spends), 2),
        "prewarm_wasted_cost_24h": round(sum(x.wasted_cost for x in spends), 2),
        "node_cost_24h": round(nodes, 2),
        "cost_per_used_gpu_hour": round(nodes / used, 3) if used > 0 else None,
        "wait_removed_gpu_minutes_24h_estimate": round(
            sum(x.wait_removed_gpu_minutes for x in spends), 1
        ),
    }


def _episodes(
    trail: list[TrailPoint], pool: str, transitions: Iterable[tuple[str, Transition]]
) -> list[dict[str, Any]]:
    """Spans of the trail in which reactive scaling owned the pool, with why."""
    reasons = [(t.at, t.reason) for name, t in transitions if name == pool]
    spans: list[dict[str, Any]] = []
    for point in trail:
        away = point.modes[pool] in (Mode.HANDED_OFF.value, Mode.RECOVERING.value)
        if away and spans and spans[-1]["end"] is None:
            continue
        if away:
            why = next((r for at, r in reversed(reasons) if at <= point.at), "handed off")
            spans.append({"start": iso_utc(point.at), "end": None, "reason": why})
        elif spans and spans[-1]["end"] is None:
            spans[-1]["end"] = iso_utc(point.at)
    return spans


def _halt(halt: Halt | None) -> dict[str, Any] | None:
    """The kill switch as the last tick read it (None: off)."""
    if halt is None:
        return None
    since = iso_utc(halt.since) if halt.since is not None else None
    return {"reason": halt.reason, "by": halt.by, "since": since}


def _announced(item: AnnouncedItem, *, now: int) -> dict[str, Any]:
    """One announced item as the status shows it: what, how much, when, from where."""
    return {
        "key": item.key,
        "source": item.source,
        "gpus": item.gpus,
        "pods": item.pods,
        "gang": item.gang,
        "earliest_start": iso_utc(item.earliest_start),
        "latest_start": iso_utc(item.latest_start),
        "starts_in_seconds": item.earliest_start - now,
    }


def _kueue(room: KueueRoom | None) -> dict[str, Any] | None:
    """What Kueue could still admit onto the pool and how its queues fare (None: not gated)."""
    if room is None:
        return None
    return {
        "admissible_gpus": room.admissible_gpus,
        "scope": room.scope,
        "queues": {
            h.name: {
                "admission_wait_p95_seconds": h.admission_wait_p95_s,
                "pods_ready_timeout_evictions": h.pods_ready_timeouts,
            }
            for h in room.health
        },
    }


def _plan_demand(view: PoolView | None) -> dict[str, Any] | None:
    """The demand the plan covered and what it rests on: the arrivals model (now + the peak
    rise, from the pods created lately) or the level forecast."""
    if view is None or view.demand is None:
        return None
    demand = view.demand
    arrivals = view.snapshot.arrivals if view.snapshot else None
    return {
        "model": demand.model,
        "quantile": demand.quantile,
        "upper_gpus": demand.upper_gpus,
        "peak_over_window": demand.peak,
        "basis": demand.basis or None,
        "pods_created_gpus": (
            None
            if arrivals is None
            else {
                f"{w // 60}m": g
                for w, g in zip(ARRIVAL_WINDOWS_SECONDS, arrivals.gpus, strict=True)
            }
        ),
    }


def _lead(
    configured: int, measured: MeasuredLead | None, planned: PlanningHorizon | None
) -> dict[str, Any]:
    """The configured lead, what launches took lately (measured) and what the plan covered."""
    return {
        "configured_seconds": configured,
        "planned": None
        if planned is None
        else {
            "lead_seconds": planned.lead_seconds,
            "horizon_seconds": planned.horizon_seconds,
            "why": planned.reason,
        },
        "measured": None
        if measured is None
        else {
            "total_seconds": round(measured.total_seconds, 1),
            "provisioning_seconds": round(measured.provisioning_seconds, 1),
            "startup_seconds": None
            if measured.startup_seconds is None
            else round(measured.startup_seconds, 1),
            "launches": measured.launches,
        },
    }


def ensure_port_free(host: str, port: int) -> None:
    """Refuse to start (one line, exit 1) when the endpoint's port is taken, before any work:
    uvicorn would log the bind error and the daemon would run on without its endpoint."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ConfigError(
                f"--port {port}: cannot listen on {host}:{port} ({exc.strerror or exc});"
                " is another forecaster running? pick another --port"
            ) from None
