"""The frontier's verdict: at each GPU-hours budget, forecaster or static headroom, by a rule.

An operator asks one question of a frontier - "does forecaster beat N GPUs of static headroom
on *our* workload?" - and a table of ratios does not answer it. The rule, fixed before any run
and the same for every pool:

* **forecaster** at a budget when its point chosen on the tuning window is, on the evaluation
  window and against static headroom at the same GPU-hours (the static curve interpolated), at
  most ``BETTER`` (0.9x) on at least one of share waiting > 5 min / mean wait / P95 wait and at
  most ``NO_WORSE`` (1.05x) on the other two: clearly better somewhere, not worse elsewhere;
* otherwise **static headroom of K GPUs**: the smallest swept K no worse than forecaster's
  point on all three at no more GPU-hours; where no K is (or no point fits the budget), the
  largest K that kept within the budget on the tuning window - chosen the way forecaster's
  point is, never on the evaluation window.

**The family, not only its knobs:** the rule judges each policy family the daemon can run that
has a point within the budget - ``predictive`` (the quantile forecast, ``chosen``) and ``burst``
(the burst rule, ``chosen_burst``; ``pools[].policy: burst``) - and where both qualify it
recommends the one with the lower geometric mean of its three ratios; where neither does,
static headroom as above (judged against the predictive point). Every family's row is said.
A family is recommended only from figures of the daemon's own loop: the frontier's burst curve
is replay's ``burst:ALPHA`` (the rule outside the loop, seconds a run), and ``burst-live:ALPHA``
- the loop as a ``policy: burst`` pool runs it, under its error budget - did far worse on
cluster04 (mean wait 1.5x at half the GPU-hours, 30 hand-offs). So where the rule's chosen
point qualifies, the frontier replays that alpha in the loop (``chosen_burst_live``,
``simulation.frontier.confirm_burst``) and the burst family is judged on those figures; a
point with only the rule's figures is said, not recommended.

Both rows are said either way, and the configuration that runs the recommendation. Pure: reads
the frontier's JSON document (``simulation.frontier``), so a saved JSON gets the same verdict.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from forecaster.core.operating_point import point_label

BETTER = 0.9
"""At most this fraction of static's figure on at least one compared metric."""
NO_WORSE = 1.05
"""... and at most this on each of the others."""
FAMILIES = (("predictive", "chosen"), ("burst", "chosen_burst"))
"""Each policy family the daemon runs live, and where the frontier document keeps its choice."""
BURST_LIVE = "chosen_burst_live"
"""The frontier document's key for the burst rule's chosen points replayed in the daemon's loop
(``burst-live``), per budget: the only burst figures a recommendation is made from."""
COMPARED = (
    ("share_waiting_over_5min", "jobs waiting > 5 min"),
    ("mean_wait_s", "mean wait"),
    ("p95_wait_s", "P95 wait"),
)


@dataclass(frozen=True)
class Verdict:
    """One budget's recommendation and the two rows behind it."""

    budget_percent: int
    recommend: Literal["forecaster", "static"]
    reason: str
    chosen: dict[str, Any] | None
    """Forecaster's point chosen on the tuning window (evaluation metrics, knob, floor_gpus);
    None when no point kept within the budget."""
    static_same_cost: dict[str, float] | None
    """Static headroom at the chosen point's GPU-hours: the three metrics and ``gpus`` (K,
    interpolated); None without a chosen point or outside the sweep."""
    static_gpus: int | None
    """The static headroom recommended (None when forecaster is)."""
    ratios: dict[str, float]
    """Chosen over static at the same GPU-hours, per compared metric."""
    family: str = "predictive"
    """The policy family of ``chosen`` (``FAMILIES``)."""
    others: tuple[Verdict, ...] = ()
    """The other families' verdicts at this budget (said, not recommended)."""
    live: bool = True
    """Whether its figures come from the daemon's own loop (a burst point only when the
    frontier replayed it there: ``BURST_LIVE``)."""

    def to_dict(self) -> dict[str, Any]:
        """As the frontier's JSON carries it (``verdict``)."""
        return {
            "budget_percent": self.budget_percent,
            "family": self.family,
            "others": [o.to_dict() for o in self.others],
            "recommend": self.recommend,
            "reason": self.reason,
            "chosen": self.chosen,
            "static_same_cost": self.static_same_cost,
            "static_gpus": self.static_gpus,
            "ratios": self.ratios,
        }


def verdicts(document: dict[str, Any], budgets: Sequence[int]) -> list[Verdict]:
    """The verdict at each budget of a frontier document."""
    return [verdict(document, budget) for budget in budgets]


def verdict(document: dict[str, Any], budget_percent: int) -> Verdict:
    """The rule above, at one budget: each family judged, the better qualifying one
    recommended (the others said beside it); static when none qualifies."""
    judged = []
    for family, key in FAMILIES:
        point = (document.get(key) or {}).get(str(budget_percent))
        live = (document.get(BURST_LIVE) or {}).get(str(budget_percent))
        if family == "burst" and live is not None:
            judged.append(family_verdict(document, budget_percent, live, family=family))
        elif point is not None or family == "predictive":
            judged.append(
                dataclasses.replace(
                    family_verdict(document, budget_percent, point, family=family),
                    live=family == "predictive",
                )
            )
    winners = [v for v in judged if v.recommend == "forecaster" and v.live]
    best = min(winners, key=lambda v: _geometric_mean(v.ratios)) if winners else judged[0]
    return dataclasses.replace(best, others=tuple(v for v in judged if v is not best))


def _geometric_mean(ratios: dict[str, float]) -> float:
    return math.exp(sum(math.log(max(r, 1e-9)) for r in ratios.values()) / len(ratios))


def family_verdict(
    document: dict[str, Any],
    budget_percent: int,
    chosen: dict[str, Any] | None,
    *,
    family: str = "predictive",
) -> Verdict:
    """The rule above for one family's ``chosen`` point at one budget."""
    static = sorted(document["static"], key=lambda m: float(m["knob"]))
    if chosen is None:
        return _static(
            document,
            budget_percent,
            chosen=None,
            same_cost=None,
            ratios={},
            reason="no forecaster point fits the budget",
            family=family,
        )
    same_cost = at_gpu_hours(static, float(chosen["gpu_hours"]))
    if same_cost is None:
        return _static(
            document,
            budget_percent,
            chosen=chosen,
            same_cost=None,
            ratios={},
            reason="the static sweep does not reach the chosen point's GPU-hours (widen it)",
            family=family,
        )
    ratios = {key: ratio(float(chosen[key]), same_cost[key]) for key, _ in COMPARED}
    if any(r <= BETTER for r in ratios.values()) and all(r <= NO_WORSE for r in ratios.values()):
        best = min(ratios, key=lambda k: ratios[k])
        name = dict(COMPARED)[best]
        return Verdict(
            budget_percent,
            "forecaster",
            f"{ratios[best]:.2f}x of static's {name} at the same GPU-hours, no other figure"
            f" above {NO_WORSE:g}x",
            chosen,
            same_cost,
            None,
            ratios,
            family=family,
        )
    worse = [name for key, name in COMPARED if ratios[key] > NO_WORSE]
    reason = (
        f"worse than static on {', '.join(worse)} (above {NO_WORSE:g}x)"
        if worse
        else f"no figure {BETTER:g}x of static's or better"
    )
    return _static(
        document,
        budget_percent,
        chosen=chosen,
        same_cost=same_cost,
        ratios=ratios,
        reason=reason,
        family=family,
    )


def _static(
    document: dict[str, Any],
    budget_percent: int,
    *,
    chosen: dict[str, Any] | None,
    same_cost: dict[str, float] | None,
    ratios: dict[str, float],
    reason: str,
    family: str,
) -> Verdict:
    """Recommend static headroom: the smallest K no worse than ``chosen`` at no more GPU-hours,
    else the largest K within the budget on the tuning window."""
    gpus = None
    if chosen is not None:
        gpus = next(
            (
                int(m["knob"])
                for m in sorted(document["static"], key=lambda m: float(m["knob"]))
                if float(m["gpu_hours"]) <= float(chosen["gpu_hours"])
                and all(float(m[key]) <= float(chosen[key]) for key, _ in COMPARED)
            ),
            None,
        )
    if gpus is not None:
        reason += f"; {gpus} GPUs: the least static headroom no worse on all three for no more"
        reason += " GPU-hours"
    else:
        limit = float(document["tune"]["reactive"]["gpu_hours"]) * (1 + budget_percent / 100)
        fits = [int(m["knob"]) for m in document["tune"]["static"] if m["gpu_hours"] <= limit]
        gpus = max(fits, default=0)
        reason += f"; {gpus} GPUs: the most static headroom within the budget on the tuning window"
    return Verdict(budget_percent, "static", reason, chosen, same_cost, gpus, ratios, family=family)


def at_gpu_hours(static: Sequence[dict[str, Any]], gpu_hours: float) -> dict[str, float] | None:
    """The static curve's compared metrics and K (``gpus``) at ``gpu_hours``, linearly
    interpolated between the two swept K around it (a one-K sweep answers at its own
    GPU-hours); None outside the sweep."""
    rows = sorted(static, key=lambda m: float(m["gpu_hours"]))
    for low, high in itertools.pairwise(rows[:1] + rows):  # (first, first) first: one K works
        x0, x1 = float(low["gpu_hours"]), float(high["gpu_hours"])
        if x0 <= gpu_hours <= x1:
            share = 0.0 if x1 == x0 else (gpu_hours - x0) / (x1 - x0)
            pairs = [(key, key) for key, _ in COMPARED] + [("gpus", "knob")]
            return {
                key: float(low[of]) + share * (float(high[of]) - float(low[of]))
                for key, of in pairs
            }
    return None


def ratio(mine: float, other: float) -> float:
    """``mine / other``; 1 when both are 0, infinite when only static's is."""
    if other == 0:
        return 1.0 if mine == 0 else float("inf")
    return mine / other


def in_sentences(verdicts: Sequence[Verdict], *, scope: str, pool: str | None) -> list[str]:
    """The verdicts for an operator: each family's row and static's at each budget, the
    recommendation and why, and the configuration that runs it. ``scope`` names the history
    and its windows."""
    lines = []
    order = [family for family, _ in FAMILIES]
    for v in verdicts:
        head = f"{scope}: at +{v.budget_percent} % GPU-hours"
        for each in sorted((v, *v.others), key=lambda e: order.index(e.family)):
            lines.append(_row(each, head))
        if v.recommend == "forecaster" and v.chosen is not None:
            rule = " with the burst rule" if v.family == "burst" else ""
            lines.append(f"  -> recommend forecaster{rule} ({v.reason}); configuration:")
            lines.extend(f"     {line}" for line in forecaster_config(v.chosen, pool, v.family))
        else:
            lines.append(
                f"  -> recommend static headroom of {v.static_gpus} GPUs ({v.reason}): keep"
                f" {v.static_gpus} GPUs of low-priority placeholders (or a CapacityBuffer of that"
                " size) warm in the pool; by the rule forecaster does not earn its place here"
            )
    return lines


def _row(v: Verdict, head: str) -> str:
    """One family's point at a budget, beside static headroom of the same cost."""
    if v.chosen is None:
        return f"{head}: {v.reason}" + (" (burst rule)" if v.family == "burst" else "")
    if v.family == "burst":
        name = f"the burst rule's choice (alpha {float(v.chosen['knob']):g}"
        name += (
            ", in the daemon's loop)"
            if v.live
            else "; replay's rule outside the daemon's loop: said, not recommended)"
        )
    else:
        label = point_label(float(v.chosen["knob"]), int(v.chosen.get("floor_gpus", 0)))
        name = f"forecaster's choice ({label})"
    if v.static_same_cost is None:
        return f"{head}, {name} has {_figures(v.chosen)}; {v.reason}"
    return (
        f"{head}, {name} has {_figures(v.chosen)}; static headroom of the same cost (about"
        f" {v.static_same_cost['gpus']:.0f} GPUs) has {_figures(v.static_same_cost)}"
    )


def forecaster_config(
    chosen: dict[str, Any], pool: str | None, family: str = "predictive"
) -> list[str]:
    """The configuration lines that run ``chosen`` in the daemon: quantile and floor
    (predictive), or the burst rule and its alpha (burst)."""
    if family == "burst":
        alpha = f"{float(chosen['knob']):g}"
        return [
            f"pools: [{{name: {pool or '<pool>'}, policy: burst, burst_alpha: {alpha}}}]"
            "   # your pool's entry: add policy and burst_alpha",
            f"# check: replay --policy burst:{alpha},burst-live:{alpha} runs it as the pool will",
        ]
    quantile = float(chosen["knob"])
    return [
        f"forecast: {{target_quantile: {quantile:g}, quantiles: [0.5, {quantile:g}]}}",
        f"pools: [{{name: {pool or '<pool>'}, floor_gpus: {int(chosen.get('floor_gpus', 0))}}}]"
        "   # your pool's entry: add floor_gpus",
    ]


def _figures(row: dict[str, Any]) -> str:
    return (
        f"{float(row['share_waiting_over_5min']):.1%} of jobs waiting > 5 min, mean"
        f" {float(row['mean_wait_s']):.0f} s, P95 {float(row['p95_wait_s']):.0f} s"
    )
