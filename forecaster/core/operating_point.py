"""The operating point: which forecast quantile (and warm floor) to plan for, for a budget.

Static headroom has to be hand-tuned per cluster and goes stale; we should not. The operator
states a budget (``Budget``: a percentage of GPU-hours over what reactive scaling alone uses,
or dollars a day at the pool's price); at each retrain the training job replays the pool's own
recent history through the cluster twin at each candidate - a quantile, and a floor of GPUs
kept warm whatever the forecast (``PoolPolicy.floor_gpus``) - (``simulation.operating_point``)
and this module picks one: the lowest mean wait among the candidates that stayed within the
budget on that history. The floor is there because a plan for the bursts it sees coming leaves
the steady trickle of small jobs to cold nodes, which a constant buffer serves cheaply. The frontier
(``simulation.frontier``) makes its choice on the tuning window with the same ``choose``.

The chosen point then sets what follows from it (``following_the_point``/``_points``): the
quantile the planner prewarms for and its floor, the GPU-hours/day cap (the budget *is* the cap)
and the error budget's SLO (a P80 plan expects 20 % misses, not 5 %; and all prewarm may go
unused, so the waste budget is the GPU-hours budget).

Pure: candidates in, a choice with its reason out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from forecaster.core.error_budget import SloPolicy, following_the_plan
from forecaster.core.policy import Budgets
from forecaster.durations import DAY

CANDIDATE_QUANTILES = (0.8, 0.9, 0.95, 0.98)
"""The quantiles an operating point is chosen among, by default (settings, the frontier)."""
CANDIDATE_FLOOR_NODES = (0, 2, 4, 6)
"""The warm floors tried with each quantile, in the pool's nodes, by default."""

REPLAYED = {"pods": "the pool's pods", "demand": "demand rebuilt as pods"}
"""What an operating point's replays ran (``OperatingPoint.replayed``), as the reason says it."""


@dataclass(frozen=True)
class Candidate:
    """One candidate (quantile, floor), replayed on history: what it cost and how long jobs
    waited."""

    quantile: float
    gpu_hours: float
    mean_wait_s: float
    p95_wait_s: float
    share_waiting_over_5min: float
    cap_breaches: int = 0
    floor_gpus: int = 0

    @property
    def label(self) -> str:
        """``P80`` or ``P80+32`` (a 32-GPU floor), for reasons and tables."""
        return point_label(self.quantile, self.floor_gpus)


def point_label(quantile: float, floor_gpus: int) -> str:
    """``P80`` or ``P80+32``: a quantile and the floor of GPUs kept warm under it."""
    return f"P{quantile * 100:g}" + (f"+{floor_gpus}" if floor_gpus else "")


@dataclass(frozen=True)
class Choice:
    """The candidate picked for a budget, and whether it kept to it."""

    candidate: Candidate
    within_budget: bool


def choose(
    candidates: Sequence[Candidate], *, reactive_gpu_hours: float, budget_percent: float
) -> Choice | None:
    """The lowest mean wait (then the fewer GPU-hours) among candidates within
    ``budget_percent`` more GPU-hours than reactive; with none within, the cheapest candidate
    (``within_budget`` False: the GPU-hours cap then holds the spend). None: no candidates."""
    if not candidates:
        return None
    within = [
        c
        for c in candidates
        if within_budget(c, reactive_gpu_hours=reactive_gpu_hours, budget_percent=budget_percent)
    ]
    if within:
        return Choice(min(within, key=lambda c: (c.mean_wait_s, c.gpu_hours)), True)
    return Choice(min(candidates, key=lambda c: (c.gpu_hours, c.mean_wait_s)), False)


def within_budget(
    candidate: Candidate, *, reactive_gpu_hours: float, budget_percent: float
) -> bool:
    """Whether ``candidate`` spent at most ``budget_percent`` more GPU-hours than reactive."""
    return candidate.gpu_hours <= reactive_gpu_hours * (1 + budget_percent / 100)


def larger_floor_worth_trying(
    candidate: Candidate,
    *,
    reactive_gpu_hours: float,
    budget_percent: float,
    p95_wait_s: float | None = None,
) -> bool:
    """Whether the next larger floor at ``candidate``'s quantile is worth replaying: not when
    ``candidate`` met the wait target (a larger floor is only dearer), nor when it spent more
    than ``budget_percent`` over reactive (a larger floor spends more still, so it could not be
    chosen). The training job's choice and the frontier's sweep skip floors by this one rule."""
    if p95_wait_s is not None:
        return candidate.p95_wait_s > p95_wait_s
    return within_budget(
        candidate, reactive_gpu_hours=reactive_gpu_hours, budget_percent=budget_percent
    )


def cheapest_within_wait(candidates: Sequence[Candidate], *, p95_wait_s: float) -> Choice | None:
    """The fewest GPU-hours (then the lower mean wait) among candidates whose P95 wait was at
    most ``p95_wait_s``; with none there, the lowest P95 wait (``within_budget`` False). None:
    no candidates."""
    if not candidates:
        return None
    met = [c for c in candidates if c.p95_wait_s <= p95_wait_s]
    if met:
        return Choice(min(met, key=lambda c: (c.gpu_hours, c.mean_wait_s)), True)
    return Choice(min(candidates, key=lambda c: (c.p95_wait_s, c.gpu_hours)), False)


@dataclass(frozen=True)
class Budget:
    """What the operator asks for: what prewarm may add a day (a share of what reactive scaling
    alone uses, or dollars), or how long jobs may wait (P95)."""

    percent: float | None = None
    """GPU-hours over reactive, e.g. 5 for +5 %."""
    dollars_per_day: float | None = None
    price_per_gpu_hour: float = 0.0
    """Converts ``dollars_per_day`` into GPU-hours (the pool's price)."""
    p95_wait_s: float | None = None
    """A wait target: the cheapest quantile whose P95 wait stays within it. It sets no spend of
    its own: the configured GPU-hours/day cap stays the ceiling."""

    def __post_init__(self) -> None:
        if sum(v is not None for v in (self.percent, self.dollars_per_day, self.p95_wait_s)) != 1:
            raise ValueError(
                "a budget is a percentage, dollars a day or a P95 wait target, exactly one"
            )
        if self.dollars_per_day is not None and self.price_per_gpu_hour <= 0:
            raise ValueError("a budget in dollars needs the pool's price per GPU-hour")

    def gpu_hours_per_day(
        self, reactive_gpu_hours_per_day: float, *, ceiling: float | None = None
    ) -> float:
        """The cap in GPU-hours a day, given what reactive uses a day; a wait target keeps the
        configured ``ceiling`` (required for one)."""
        if self.percent is not None:
            return reactive_gpu_hours_per_day * self.percent / 100
        if self.dollars_per_day is not None:
            return self.dollars_per_day / self.price_per_gpu_hour
        if ceiling is None:
            raise ValueError("a wait target needs the configured GPU-hours/day cap as its ceiling")
        return ceiling

    @property
    def label(self) -> str:
        """``+5 % GPU-hours``, ``$400/day`` or ``P95 wait <= 120 s``, for logs and the page."""
        if self.percent is not None:
            return f"+{self.percent:g} % GPU-hours"
        if self.dollars_per_day is not None:
            return f"${self.dollars_per_day:g}/day"
        return f"P95 wait <= {self.p95_wait_s:g} s"


@dataclass(frozen=True)
class OperatingPoint:
    """A pool's chosen quantile and floor and the budget it follows; stored with the model it
    was chosen with (``forecasting.artifacts``) and shown on the inspection endpoint."""

    budget: str
    """The operator's budget as stated (``Budget.label``)."""
    budget_percent: float
    """The budget as a share of reactive's GPU-hours on the replayed history."""
    quantile: float
    within_budget: bool
    gpu_hours_per_day_budget: float
    """The budget in GPU-hours a day: the cap."""
    reactive_gpu_hours_per_day: float
    window: tuple[int, int]
    """The replayed history that was measured (epoch seconds, end exclusive)."""
    candidates: tuple[Candidate, ...]
    reason: str
    replayed: str = "demand"
    """What the replays ran: ``pods`` (the pool's own pods: creation, GPUs, lifetime) or
    ``demand`` (the demand level rebuilt as pods: job sizes and boundaries guessed)."""
    p95_wait_target_s: float | None = None
    """Set when the operator gave a wait target rather than a spend (``Budget.p95_wait_s``)."""
    floor_gpus: int = 0
    """GPUs kept warm whatever the forecast (``PoolPolicy.floor_gpus``); 0 before floors were
    candidates."""

    @property
    def label(self) -> str:
        """``P80`` or ``P80+32``."""
        return point_label(self.quantile, self.floor_gpus)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (artifacts, the inspection endpoint)."""
        return {
            "budget": self.budget,
            "budget_percent": self.budget_percent,
            "quantile": self.quantile,
            "within_budget": self.within_budget,
            "gpu_hours_per_day_budget": self.gpu_hours_per_day_budget,
            "reactive_gpu_hours_per_day": self.reactive_gpu_hours_per_day,
            "window": list(self.window),
            "candidates": [c.__dict__ for c in self.candidates],
            "reason": self.reason,
            "replayed": self.replayed,
            "p95_wait_target_s": self.p95_wait_target_s,
            "floor_gpus": self.floor_gpus,
        }

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> OperatingPoint:
        """Inverse of ``to_dict``; a malformed document raises KeyError, TypeError or
        ValueError."""
        point = cls(
            budget=str(document["budget"]),
            budget_percent=float(document["budget_percent"]),
            quantile=float(document["quantile"]),
            within_budget=bool(document["within_budget"]),
            gpu_hours_per_day_budget=float(document["gpu_hours_per_day_budget"]),
            reactive_gpu_hours_per_day=float(document["reactive_gpu_hours_per_day"]),
            window=(int(document["window"][0]), int(document["window"][1])),
            candidates=tuple(Candidate(**c) for c in document["candidates"]),
            reason=str(document["reason"]),
            replayed=str(document.get("replayed", "demand")),
            p95_wait_target_s=_optional_float(document.get("p95_wait_target_s")),
            floor_gpus=int(document.get("floor_gpus", 0)),
        )
        if (
            not 0.5 < point.quantile < 1
            or point.floor_gpus < 0
            or point.gpu_hours_per_day_budget < 0
            or point.replayed not in REPLAYED
        ):
            raise ValueError(f"operating point out of range: {document}")
        return point


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def operating_point(
    candidates: Sequence[Candidate],
    *,
    reactive_gpu_hours: float,
    budget: Budget,
    window: tuple[int, int],
    ceiling_gpu_hours_per_day: float | None = None,
    replayed: str = "demand",
) -> OperatingPoint | None:
    """The choice for ``budget`` on replayed history (``replayed``: what ran, ``REPLAYED``),
    with the cap it sets (``Budget.gpu_hours_per_day``) and why."""
    days = max(window[1] - window[0], 1) / DAY
    if reactive_gpu_hours <= 0:
        return None
    reactive_per_day = reactive_gpu_hours / days
    cap = budget.gpu_hours_per_day(reactive_per_day, ceiling=ceiling_gpu_hours_per_day)
    percent = 100 * cap / reactive_per_day
    if budget.p95_wait_s is not None:
        choice = cheapest_within_wait(candidates, p95_wait_s=budget.p95_wait_s)
    else:
        choice = choose(candidates, reactive_gpu_hours=reactive_gpu_hours, budget_percent=percent)
    if choice is None:
        return None
    picked = choice.candidate
    overhead = picked.gpu_hours / reactive_gpu_hours - 1
    tried = ", ".join(
        f"{c.label} {c.gpu_hours / reactive_gpu_hours - 1:+.1%}"
        f" mean {c.mean_wait_s:.0f} s P95 {c.p95_wait_s:.0f} s"
        for c in candidates
    )
    verdict = _verdict(budget, cap=cap, percent=percent, within_budget=choice.within_budget)
    return OperatingPoint(
        budget=budget.label,
        budget_percent=percent,
        quantile=picked.quantile,
        floor_gpus=picked.floor_gpus,
        within_budget=choice.within_budget,
        gpu_hours_per_day_budget=cap,
        reactive_gpu_hours_per_day=reactive_per_day,
        window=window,
        candidates=tuple(candidates),
        reason=f"{picked.label} ({verdict}: {overhead:+.1%}, mean wait"
        f" {picked.mean_wait_s:.0f} s over {days:.1f} replayed days of {REPLAYED[replayed]};"
        f" tried {tried})",
        replayed=replayed,
        p95_wait_target_s=budget.p95_wait_s,
    )


def following_the_point(slo: SloPolicy, point: OperatingPoint) -> SloPolicy:
    """The SLO a pool runs at ``point`` (``slo_at`` its quantile and budget)."""
    return slo_at(slo, quantile=point.quantile, gpu_hours_per_day=point.gpu_hours_per_day_budget)


def slo_at(slo: SloPolicy, *, quantile: float, gpu_hours_per_day: float) -> SloPolicy:
    """``slo`` for a plan at ``quantile`` under a GPU-hours/day budget: at least the misses the
    quantile makes by design (the configured target when that is looser), and waste up to the
    budget."""
    planned = following_the_plan(
        slo, target_quantile=quantile, prewarm_gpu_hours_per_day=gpu_hours_per_day
    )
    return replace(planned, target_exceedance=max(slo.target_exceedance, planned.target_exceedance))


def following_the_points(budgets: Budgets, points: Sequence[OperatingPoint | None]) -> Budgets:
    """The shared caps when every pool runs at a point chosen for a spend: the GPU-hours/day cap
    is the sum of their budgets (it replaces the configured one, which would otherwise hold a
    chosen point below its budget); the other caps stay. Any pool without one, or with a wait
    target (it sets no spend: the configured cap is its ceiling): ``budgets`` unchanged."""
    if not points or any(p is None or p.p95_wait_target_s is not None for p in points):
        return budgets
    total = sum(p.gpu_hours_per_day_budget for p in points if p is not None)
    return replace(budgets, max_prewarm_gpu_hours_per_day=total)


def _verdict(budget: Budget, *, cap: float, percent: float, within_budget: bool) -> str:
    """Why the point was chosen, in the budget's own terms (a wait target, or a spend)."""
    stated = (
        budget.label if budget.dollars_per_day is None else f"{budget.label} (+{percent:.1f} %)"
    )
    if budget.p95_wait_s is not None:
        return (
            f"the cheapest with {stated}, under the {cap:,.0f} GPU-hours/day cap"
            if within_budget
            else f"no candidate kept {stated} under the {cap:,.0f} GPU-hours/day cap: the"
            " lowest P95 wait"
        )
    return (
        f"lowest mean wait within {stated}"
        if within_budget
        else f"no candidate kept within {stated}: the cheapest, held by the cap"
    )
