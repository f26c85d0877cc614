"""The forecast's SLO error budget and the hand-off to reactive scaling, as a state machine.

SLO: at most ``target_exceedance`` (5 %) of evaluated points may see actual demand above the P95
forecast over the rolling ``window_seconds`` (24 h). A point is evaluated once its target time
has passed. Burn rate over a window = (share exceeded in the window) / target_exceedance.

Transitions (each with a reason, as in multi-window burn-rate alerting):

* predictive -> handed-off: the fast window (1 h) burns at >= ``fast_burn`` **and** the slow
  window (6 h) at >= ``slow_burn``; or the **waste budget** is spent (prewarmed GPU-hours that
  expired without a real pod using them, over 24 h). Prewarm is withdrawn and NodePools restored.
* handed-off -> recovering: the fast window burns below ``recovery_burn`` and waste is within
  budget. Still no prewarm.
* recovering -> predictive: that stayed true for ``recovery_seconds`` (hysteresis: no flapping);
  recovering -> handed-off as soon as it stops being true.

A window with fewer than ``min_points`` evaluations has no burn rate and never triggers.
A burn threshold is a multiple of the target, and for a plan at a low quantile the multiple can
ask for more misses than there are points (6 x a P80 plan's 20 % = 120 %): such a window could
never trigger, and a P80 forecast that missed every point would never be handed off. So each
threshold is capped where the window's share of misses is halfway between the target and all of
them (``SloPolicy.reachable``): 60 % for a P80 plan, unchanged for P95 and above.
The state is plain data (``to_dict``/``from_dict``) so a restart does not forget a hand-off.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from forecaster.core.budget import (
    BUCKET_SECONDS,
    DayBuckets,
    add_gpu_hours,
    drop_through,
    gpu_hours_last_day,
)
from forecaster.core.planner import Mode
from forecaster.durations import DAY

# Evaluations are tallied per BUCKET_SECONDS (5 minutes) like waste and spend: fine enough for
# the 1 h / 6 h / 24 h windows.


@dataclass(frozen=True)
class SloPolicy:
    """Targets and thresholds; validated on construction."""

    target_exceedance: float = 0.05
    window_seconds: int = 86400
    fast_window_seconds: int = 3600
    fast_burn: float = 6.0
    slow_window_seconds: int = 21600
    slow_burn: float = 3.0
    recovery_burn: float = 1.0
    recovery_seconds: int = 7200
    min_points: int = 12
    max_waste_gpu_hours_per_day: float = 150.0
    """Prewarm that ended unused, per rolling 24 h. A P95 plan leaves most prewarm unused by
    design, so keep it near the prewarm GPU-hours/day budget."""

    @property
    def fast_threshold(self) -> float:
        """The fast window's burn that hands off, as a window can reach it."""
        return self.reachable(self.fast_burn)

    @property
    def slow_threshold(self) -> float:
        """The slow window's burn that hands off, as a window can reach it."""
        return self.reachable(self.slow_burn)

    @property
    def calm_threshold(self) -> float:
        """The fast window's burn under which a handed-off pool recovers: never above a
        hand-off threshold, or a pool could recover while it still burns."""
        return min(self.recovery_burn, self.fast_threshold, self.slow_threshold)

    def reachable(self, burn: float) -> float:
        """``burn``, capped where the share of misses it means is halfway between the target
        and every point missed: a multiple of a large target (a P80 plan's 20 % x 6) would
        otherwise need more misses than there are points, and never trigger."""
        return min(burn, round((1 + self.target_exceedance) / (2 * self.target_exceedance), 9))

    def __post_init__(self) -> None:
        if not 0 < self.target_exceedance < 1:
            raise ValueError("target_exceedance must be between 0 and 1")
        if not 0 < self.fast_window_seconds <= self.slow_window_seconds <= self.window_seconds:
            raise ValueError("windows must satisfy 0 < fast <= slow <= window")
        if min(self.fast_burn, self.slow_burn, self.recovery_burn) <= 0:
            raise ValueError("burn thresholds must be > 0")
        if self.recovery_burn > min(self.fast_burn, self.slow_burn):
            raise ValueError("recovery_burn must not exceed the hand-off thresholds")
        if self.recovery_seconds < 0 or self.min_points < 1:
            raise ValueError("recovery_seconds must be >= 0 and min_points >= 1")
        if not 0 <= self.max_waste_gpu_hours_per_day < math.inf:
            raise ValueError("max_waste_gpu_hours_per_day must be a finite number >= 0")


def following_the_plan(
    policy: SloPolicy, *, target_quantile: float, prewarm_gpu_hours_per_day: float
) -> SloPolicy:
    """``policy`` with the targets a plan at ``target_quantile`` can meet by design.

    A P``q`` forecast is exceeded ``1 - q`` of the time when it is right (a P80 plan misses 20 %,
    not 5 %): a tighter SLO hands a well-calibrated plan off all day. And all prewarm may go
    unused, so the waste budget is what prewarm may spend a day; a smaller one caps the
    operating point below the budget the operator chose.
    """
    return replace(
        policy,
        target_exceedance=round(1.0 - target_quantile, 9),
        max_waste_gpu_hours_per_day=prewarm_gpu_hours_per_day,
    )


@dataclass(frozen=True)
class Evaluation:
    """A forecast whose target time has passed: did demand stay under its P95?"""

    target_time: int
    actual_gpus: float
    upper_gpus: float

    @property
    def exceeded(self) -> bool:
        """True when demand went above the forecast."""
        return self.actual_gpus > self.upper_gpus


@dataclass(frozen=True)
class Transition:
    """A change of mode, for logs and events."""

    at: int
    before: Mode
    after: Mode
    reason: str


@dataclass(frozen=True)
class ErrorBudgetState:
    """Mode plus per-minute tallies over the SLO window."""

    mode: Mode = Mode.PREDICTIVE
    since: int = 0
    reason: str = "started in predictive mode"
    points: tuple[tuple[int, int, int], ...] = ()
    """(bucket start, evaluated, exceeded) per 5 minutes, oldest first."""
    waste: DayBuckets = ()
    """Prewarm GPU-hours that ended unused, per 5 minutes over the last day."""
    calm_since: int | None = None
    transitions: tuple[Transition, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for persistence."""
        return {
            "mode": self.mode.value,
            "since": self.since,
            "reason": self.reason,
            "points": list(map(list, self.points)),
            "waste": list(map(list, self.waste)),
            "calm_since": self.calm_since,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ErrorBudgetState:
        """Inverse of ``to_dict`` (transitions are not persisted: they are already logged)."""
        return cls(
            mode=Mode(data["mode"]),
            since=int(data["since"]),
            reason=str(data["reason"]),
            points=tuple((int(a), int(b), int(c)) for a, b, c in data["points"]),
            waste=tuple((int(a), float(b)) for a, b in data["waste"]),
            calm_since=None if data.get("calm_since") is None else int(data["calm_since"]),
        )


def burn_rate(state: ErrorBudgetState, policy: SloPolicy, *, window: int, now: int) -> float | None:
    """Exceedance share over ``window`` divided by the target; None if too few points."""
    evaluated = exceeded = 0
    for minute, n, bad in reversed(state.points):  # newest first: stop at the window's start
        if minute <= now - window:
            break
        if minute <= now:
            evaluated += n
            exceeded += bad
    if evaluated < policy.min_points:
        return None
    return exceeded / evaluated / policy.target_exceedance


def budget_remaining(state: ErrorBudgetState, policy: SloPolicy, *, now: int) -> float:
    """Share of the window's error budget left (1 = untouched, <= 0 = spent)."""
    burn = burn_rate(state, policy, window=policy.window_seconds, now=now)
    return 1.0 if burn is None else 1.0 - burn


def waste_last_day(state: ErrorBudgetState, *, now: int) -> float:
    """Prewarmed GPU-hours that expired unused in the last 24 h."""
    return gpu_hours_last_day(state.waste, at=now)


@dataclass(frozen=True)
class _Signals:
    """What the transition rules look at, computed once per call."""

    fast: float | None
    slow: float | None
    waste: float
    policy: SloPolicy

    @property
    def burning(self) -> bool:
        p = self.policy
        return (
            self.fast is not None
            and self.slow is not None
            and self.fast >= p.fast_threshold
            and self.slow >= p.slow_threshold
        )

    @property
    def wasting(self) -> bool:
        return self.waste > self.policy.max_waste_gpu_hours_per_day

    @property
    def calm(self) -> bool:
        return (self.fast is None or self.fast < self.policy.calm_threshold) and not self.wasting

    def describe(self) -> str:
        fast = "n/a" if self.fast is None else f"{self.fast:.1f}"
        slow = "n/a" if self.slow is None else f"{self.slow:.1f}"
        return f"1h burn rate {fast}, 6h {slow}, waste {self.waste:.1f} GPU-hours/24h"


def advance(
    state: ErrorBudgetState,
    *,
    evaluations: Sequence[Evaluation],
    wasted_gpu_hours: float,
    policy: SloPolicy,
    now: int,
) -> ErrorBudgetState:
    """Record new evaluations and waste, then apply the transition rules."""
    state = _recorded(state, evaluations, wasted_gpu_hours, policy=policy, now=now)
    signals = _Signals(
        fast=burn_rate(state, policy, window=policy.fast_window_seconds, now=now),
        slow=burn_rate(state, policy, window=policy.slow_window_seconds, now=now),
        waste=waste_last_day(state, now=now),
        policy=policy,
    )
    if state.mode is Mode.PREDICTIVE:
        return _from_predictive(state, signals, now)
    if state.mode is Mode.HANDED_OFF:
        if signals.calm:
            minutes = policy.recovery_seconds // 60
            reason = f"calm again ({signals.describe()}): recovering for {minutes} min"
            return replace(_move(state, Mode.RECOVERING, now, reason), calm_since=now)
        return state
    return _from_recovering(state, signals, now)


def _from_predictive(state: ErrorBudgetState, signals: _Signals, now: int) -> ErrorBudgetState:
    p = signals.policy
    if signals.burning:
        why = (
            f"error budget burning (>= {p.fast_threshold:g} over 1h"
            f" and >= {p.slow_threshold:g} over 6h)"
        )
        return _move(state, Mode.HANDED_OFF, now, f"{why}: {signals.describe()}")
    if signals.wasting:
        why = f"waste budget spent (> {p.max_waste_gpu_hours_per_day:g} GPU-hours expired unused)"
        return _move(state, Mode.HANDED_OFF, now, f"{why}: {signals.describe()}")
    return state


def _from_recovering(state: ErrorBudgetState, signals: _Signals, now: int) -> ErrorBudgetState:
    if not signals.calm:
        reason = f"recovery interrupted: {signals.describe()}"
        return replace(_move(state, Mode.HANDED_OFF, now, reason), calm_since=None)
    calm_since = state.calm_since if state.calm_since is not None else now
    if now - calm_since >= signals.policy.recovery_seconds:
        minutes = signals.policy.recovery_seconds // 60
        reason = f"forecast within budget for {minutes} min ({signals.describe()}): predictive"
        return replace(_move(state, Mode.PREDICTIVE, now, reason), calm_since=None)
    return replace(state, calm_since=calm_since)


def _move(state: ErrorBudgetState, mode: Mode, now: int, reason: str) -> ErrorBudgetState:
    transition = Transition(at=now, before=state.mode, after=mode, reason=reason)
    return replace(
        state, mode=mode, since=now, reason=reason, transitions=(*state.transitions, transition)
    )


def _recorded(
    state: ErrorBudgetState,
    evaluations: Sequence[Evaluation],
    wasted_gpu_hours: float,
    *,
    policy: SloPolicy,
    now: int,
) -> ErrorBudgetState:
    horizon = now - max(policy.window_seconds, 86400)
    if (
        not evaluations
        and wasted_gpu_hours <= 0
        and (not state.points or state.points[0][0] > horizon)
        and (not state.waste or state.waste[0][0] > now - DAY)
    ):
        return state  # nothing new, nothing aged out: the same state, no copy (every tick)
    return replace(
        state,
        points=_tallied(state.points, evaluations, after=horizon),
        waste=add_gpu_hours(state.waste, gpu_hours=wasted_gpu_hours, at=now),
    )


def _tallied(
    points: tuple[tuple[int, int, int], ...], evaluations: Sequence[Evaluation], *, after: int
) -> tuple[tuple[int, int, int], ...]:
    """``points`` with ``evaluations`` counted in their buckets and buckets up to ``after``
    dropped, oldest first. Evaluations come in time order, into the newest bucket or a new
    one: that case touches only the ends (it runs at every tick); any other order is merged."""
    tail = list(points[-1:])
    for ev in evaluations:
        bucket = ev.target_time - ev.target_time % BUCKET_SECONDS
        if tail and tail[-1][0] == bucket:
            _, n, bad = tail[-1]
            tail[-1] = (bucket, n + 1, bad + int(ev.exceeded))
        elif not tail or tail[-1][0] < bucket:
            tail.append((bucket, 1, int(ev.exceeded)))
        else:
            return _merged(points, evaluations, after=after)
    return drop_through((*points[:-1], *tail), after)


def _merged(
    points: tuple[tuple[int, int, int], ...], evaluations: Sequence[Evaluation], *, after: int
) -> tuple[tuple[int, int, int], ...]:
    """``_tallied`` for evaluations in any order (a restart, a clock step back)."""
    tally = {m: (n, b) for m, n, b in points}
    for ev in evaluations:
        bucket = ev.target_time - ev.target_time % BUCKET_SECONDS
        n, bad = tally.get(bucket, (0, 0))
        tally[bucket] = (n + 1, bad + int(ev.exceeded))
    return tuple((m, n, b) for m, (n, b) in sorted(tally.items()) if m > after)
