"""``forecaster replay --frontier``: predictive against static headroom at equal GPU-hours.

Static headroom (an overprovisioner of K GPUs) is the strongest simple alternative, and it is
a curve, not a point: each K buys a wait for some GPU-hours. So we sweep K, sweep predictive's
knobs (the forecast quantile it plans for, and the floor of nodes it keeps warm whatever the
forecast; a larger floor only where the smaller one kept within the largest budget - past it
a floor could not be chosen, ``FloorChains``), and compare at equal GPU-hours by interpolating
the static curve. Every run covers the trace from its start (history to learn from) to the
end of the evaluation window and is measured twice: on the **tuning** window, where the
operating point for a GPU-hours budget (+5 %, +10 % over reactive) is chosen, and on the later
**evaluation** window, where it is judged - no choice looks at evaluation outcomes.

The ``burst`` baseline (floor + alpha x GPUs of pods created in the last 15 min, re-planned
every 15 s; ``simulation.policies.Burst``) is swept over alpha the same way: the product's model
must do at least as well at the same GPU-hours.

Two bounds go with it. ``oracle`` knows every job: how far foresight could go. ``continuation``
knows, once a submission's first pod exists, the rest of that submission (jobs at most GAP s
apart; ``simulation.policies.continuation``) and nothing before it, over a static floor swept
like static's K. With GAP 60 s it is the best a model reading batches from the pods created so
far could do; with 300 s it also foresees the next submission when it follows within 5 minutes,
more than pods can tell. Where even it misses, the trace's waits come from submissions that land
unannounced, which only warm capacity serves.

JSON (``--json``): evaluation-window metrics
``{"reactive": M, "oracle": M, "static": [M + {"knob": K}],
"predictive": [M + {"knob": q, "floor_gpus": F}], "burst": [M + {"knob": alpha}],
"chosen": {"5": M + {"knob": q, "floor_gpus": F}, "10": ...},
"chosen_burst": {...}, "continuation": {"60": [M + {"knob": floor}], ...},
"chosen_continuation": {"60": {"5": M + {"knob": floor}, ...}, ...},
"verdict": {"5": simulation.verdict.Verdict.to_dict(), ...}}`` with ``M`` =
gpu_hours, p95_wait_s, mean_wait_s, share_waiting_over_60s, share_waiting_over_5min,
cap_breaches; plus the same under ``"tune"``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from forecaster.core.jobs import JobTrace
from forecaster.core.operating_point import (
    CANDIDATE_FLOOR_NODES,
    CANDIDATE_QUANTILES,
    larger_floor_worth_trying,
    point_label,
    within_budget,
)
from forecaster.core.operating_point import choose as choose_candidate
from forecaster.durations import DAY
from forecaster.errors import ConfigError
from forecaster.simulation.metrics import ReplayMetrics, as_candidate, measure
from forecaster.simulation.replay import ReplaySetup, replay
from forecaster.simulation.twin import Policy
from forecaster.simulation.verdict import (
    BETTER,
    BURST_LIVE,
    NO_WORSE,
    family_verdict,
    in_sentences,
    verdicts,
)
from forecaster.simulation.workers import Interrupted, run_each


class PolicyFactory(Protocol):
    """Builds a fresh replay policy by name (``app.replay_policies.replay_policy``)."""

    def __call__(self, name: str, setup: ReplaySetup, *, jobs: JobTrace) -> Policy:
        """The policy ``name`` for ``setup``."""
        ...


STATIC_KNOBS = (0, 8, 16, 24, 32, 48, 64, 96)
PREDICTIVE_KNOBS = CANDIDATE_QUANTILES
"""Predictive's quantiles: the operating point's default candidates, so the frontier's choice
and the daemon's pick from the same grid."""
FLOOR_NODES = CANDIDATE_FLOOR_NODES
"""Predictive's floors, in nodes (likewise)."""
BURST_KNOBS = (0.5, 1.0, 2.0, 4.0, 8.0)
CONTINUATION_GAPS = (60, 300)
"""Seconds between two jobs of one submission, for the continuation bound."""
BUDGETS_PERCENT = (5, 10)
KEYS = (
    "gpu_hours",
    "p95_wait_s",
    "mean_wait_s",
    "share_waiting_over_60s",
    "share_waiting_over_5min",
    "cap_breaches",
)
COMPARED = ("share_waiting_over_5min", "mean_wait_s", "p95_wait_s")


@dataclass(frozen=True)
class Point:
    """One run: its knob (and predictive's floor) and its metrics on both windows."""

    knob: float
    tune: ReplayMetrics
    eval: ReplayMetrics
    floor_gpus: int | None = None
    """Predictive's floor (GPUs kept warm whatever the forecast); None for other policies."""

    @property
    def knobs(self) -> dict[str, float]:
        """The knobs as the JSON carries them."""
        if self.floor_gpus is None:
            return {"knob": self.knob}
        return {"knob": self.knob, "floor_gpus": self.floor_gpus}

    @property
    def label(self) -> str:
        """``0.8`` or ``P80+32`` (predictive's quantile and floor)."""
        if self.floor_gpus is None:
            return f"{self.knob:g}"
        return point_label(self.knob, self.floor_gpus)


def parse_days(text: str, flag: str) -> tuple[float, float]:
    """``"10-30"`` -> (10.0, 30.0)."""
    try:
        first, last = (float(part) for part in text.split("-", 1))
    except ValueError:
        raise ConfigError(f"{flag}: expected FIRST-LAST days, e.g. 10-30, got {text!r}") from None
    if not 0 <= first < last:
        raise ConfigError(f"{flag}: {text!r} is not a window (first < last)")
    return first, last


def choose(
    points: Sequence[Point], *, reactive_gpu_hours: float, budget_percent: float
) -> Point | None:
    """The operating point for a budget, judged on the tuning window only - the daemon's own
    choice (``core.operating_point.choose``); None when no knob kept within the budget."""
    candidates = [as_candidate(p.knob, p.tune, floor_gpus=p.floor_gpus or 0) for p in points]
    choice = choose_candidate(
        candidates, reactive_gpu_hours=reactive_gpu_hours, budget_percent=budget_percent
    )
    if choice is None or not choice.within_budget:
        return None
    return points[candidates.index(choice.candidate)]


def interpolate(curve: Sequence[ReplayMetrics], gpu_hours: float, *, key: str) -> float | None:
    """``key`` of the static curve at ``gpu_hours`` (linear); None outside the swept range."""
    points = sorted((m.gpu_hours, float(getattr(m, key))) for m in curve)
    if not points or not points[0][0] <= gpu_hours <= points[-1][0]:
        return None
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if x0 <= gpu_hours <= x1:
            return y0 if x1 == x0 else y0 + (gpu_hours - x0) / (x1 - x0) * (y1 - y0)
    return points[-1][1]


WORDS = (
    ("p95_wait_s", "P95 wait", "{:.0f} s"),
    ("mean_wait_s", "mean wait", "{:.1f} s"),
    ("share_waiting_over_5min", "jobs waiting over 5 minutes", "{:.1%}"),
)
"""The compared metrics as a sentence names them (``in_words``)."""


def in_words(
    label: str,
    point: ReplayMetrics,
    static: Sequence[ReplayMetrics],
    *,
    reactive_gpu_hours: float | None = None,
) -> str:
    """Where ``point`` stands against static headroom at the same GPU-hours, as a sentence for
    an operator (the report, the terminal): the static curve interpolated at its GPU-hours,
    each compared metric side by side, and which are better or worse."""
    spent = f"{point.gpu_hours:,.0f} GPU-hours"
    if reactive_gpu_hours:
        spent += f" ({point.gpu_hours / reactive_gpu_hours - 1:+.1%} against reactive scaling)"
    if len(static) < 2:
        return f"{label}: {spent}; no static sweep to compare with (--sweep K,K,...)"
    pairs = []
    better, worse = [], []
    for key, name, fmt in WORDS:
        other = interpolate(static, point.gpu_hours, key=key)
        if other is None:
            low, high = min(m.gpu_hours for m in static), max(m.gpu_hours for m in static)
            return (
                f"{label}: {spent}, outside the static headroom swept ({low:,.0f}-{high:,.0f}"
                " GPU-hours): no comparison at the same cost"
            )
        mine = float(getattr(point, key))
        pairs.append(f"{name} {fmt.format(mine)} against {fmt.format(other)}")
        if mine < other:
            better.append(name)
        elif mine > other:
            worse.append(name)
    verdict = "; ".join(
        part
        for part in (
            f"better on {', '.join(better)}" if better else "",
            f"worse on {', '.join(worse)}" if worse else "",
        )
        if part
    )
    return (
        f"{label}: {spent}; against static headroom of the same cost, {', '.join(pairs)}"
        f" - {verdict or 'the same'}"
    )


def said(document: dict[str, Any]) -> list[str]:
    """The frontier's evaluation window in words (``in_words``): the points chosen on the tuning
    window for each budget (predictive, then the burst baseline) and the oracle, each against
    static headroom at the same GPU-hours, then the verdict - what its HTML report says before
    any chart."""
    static = [from_document(m) for m in document["static"]]
    reactive = float(document["reactive"]["gpu_hours"])
    lines = []
    for budget in BUDGETS_PERCENT:
        for label, key in (
            ("predictive", "chosen"),
            ("burst", "chosen_burst"),
            (LIVE_BURST, BURST_LIVE),
        ):
            row = document.get(key, {}).get(str(budget))
            if row is None and key == BURST_LIVE:
                continue  # replayed in the loop only where the rule's point qualified
            if row is None:
                lines.append(f"+{budget} % budget: no {label} point fits it on the tuning window")
                continue
            point = Point(
                row["knob"], from_document(row), from_document(row), row.get("floor_gpus")
            )
            lines.append(
                in_words(
                    f"+{budget} % budget, {label} {point.label} (chosen on the tuning window)",
                    point.eval,
                    static,
                    reactive_gpu_hours=reactive,
                )
            )
    lines.append(
        in_words(
            "oracle (knows every job)",
            from_document(document["oracle"]),
            static,
            reactive_gpu_hours=reactive,
        )
    )
    if "tune" in document:  # the verdict, as the terminal said it
        judged = verdicts(document, BUDGETS_PERCENT)
        lines += in_sentences(judged, scope="evaluation window", pool=None)
    return lines


def from_document(document: dict[str, Any]) -> ReplayMetrics:
    """A frontier JSON's metrics as ``ReplayMetrics`` (the figures it does not carry: 0)."""
    return ReplayMetrics(
        jobs=0,
        mean_wait_s=document["mean_wait_s"],
        p50_wait_s=0.0,
        p95_wait_s=document["p95_wait_s"],
        p99_wait_s=0.0,
        share_waiting_over_60s=document["share_waiting_over_60s"],
        share_waiting_over_5min=document["share_waiting_over_5min"],
        gpu_hours=document["gpu_hours"],
        idle_gpu_hours=0.0,
        prewarm_gpu_hours_used=0.0,
        prewarm_gpu_hours_expired=0.0,
        cost=0.0,
        cost_spot=0.0,
        cap_breaches=document["cap_breaches"],
        handoffs=0,
    )


def _m(metrics: ReplayMetrics, **extra: float) -> dict[str, Any]:
    return {k: getattr(metrics, k) for k in KEYS} | extra


def frontier(
    jobs: JobTrace,
    setup: ReplaySetup,
    *,
    make_policy: PolicyFactory,
    epoch: int,
    tune: tuple[float, float],
    evaluate: tuple[float, float],
    static_knobs: Sequence[int] = STATIC_KNOBS,
    predictive_knobs: Sequence[float] = PREDICTIVE_KNOBS,
    floor_nodes: Sequence[int] = FLOOR_NODES,
    burst_knobs: Sequence[float] = BURST_KNOBS,
    continuation_gaps: Sequence[float] = CONTINUATION_GAPS,
    policy_knobs: Mapping[str, Sequence[float]] | None = None,
    workers: int = 1,
    progress: Callable[[str], None] | None = None,
    pool: str | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Run the sweeps, ``workers`` replays at a time (``simulation.workers``; the same figures
    whatever the number); the JSON document and the lines to print, ending with the verdict at
    each budget (``simulation.verdict``; ``pool`` names the pool its configuration lines are
    for). ``make_policy`` must pickle when ``workers`` > 1. ``policy_knobs``: other policies
    by name, swept at their knobs (``name:knob``) and chosen per budget as burst is."""
    setup, windows = _windows(setup, epoch=epoch, tune=tune, evaluate=evaluate)
    runs = sweep(
        setup,
        static_knobs=static_knobs,
        predictive_knobs=predictive_knobs,
        floor_nodes=floor_nodes,
        burst_knobs=burst_knobs,
        continuation_gaps=continuation_gaps,
        policy_knobs=policy_knobs or {},
    )
    more = functools.partial(
        _replayed,
        jobs=jobs,
        make_policy=make_policy,
        windows=windows,
        workers=workers,
        progress=progress,
        done=[],
    )
    chains = FloorChains(runs, setup, floor_nodes=floor_nodes)
    curves = _Curves.of(runs, more(runs, follow=chains), continuation_gaps)
    curves.static = extend_static(
        curves.static,
        curves.chosen_gpu_hours(),
        gpus_per_node=setup.twin.gpus_per_node,
        run=lambda knobs: more([Run("static", f"static:{k}", k, setup) for k in knobs]),
    )
    document, (header, scope) = curves.document(), _said(pool, tune=tune, evaluate=evaluate)
    lines = [header, *curves.tables()]
    lines += _choices(curves, document)
    lines += confirm_burst(
        document,
        reactive=curves.reactive,
        static=curves.static,
        run=lambda alphas: more([Run(LIVE_BURST, f"{LIVE_BURST}:{a:g}", a, setup) for a in alphas]),
    )
    return document, lines + _verdict(document, scope=scope, pool=pool)


def _windows(
    setup: ReplaySetup, *, epoch: int, tune: tuple[float, float], evaluate: tuple[float, float]
) -> tuple[ReplaySetup, dict[str, tuple[float, float]]]:
    """The setup warmed up to the tuning window's start and run to the evaluation window's end,
    and both windows in epoch seconds; tuning must end before the evaluation begins."""
    if tune[1] > evaluate[0]:
        raise ConfigError("--tune-days must end before --eval-days begin")
    setup = dataclasses.replace(
        setup, warmup_end=int(epoch + tune[0] * DAY), end=int(epoch + evaluate[1] * DAY)
    )
    windows = {
        "tune": (epoch + tune[0] * DAY, epoch + tune[1] * DAY),
        "eval": (epoch + evaluate[0] * DAY, epoch + evaluate[1] * DAY),
    }
    return setup, windows


def _said(
    pool: str | None, *, tune: tuple[float, float], evaluate: tuple[float, float]
) -> tuple[str, str]:
    """The windows as the table's header says them (days from 0), and the verdict's scope (as
    the history split says them: ``_counted``)."""
    days = f"tune days {tune[0]:g}-{tune[1]:g}, evaluation days {evaluate[0]:g}-{evaluate[1]:g}"
    scope = f"{pool or 'the trace'}, tuned days {_counted(tune)}, judged days {_counted(evaluate)}"
    return f"windows: {days}", scope


def _counted(window: tuple[float, float]) -> str:
    """Days ``[from, to)`` from 0 as people count them, from 1 and inclusive: (7, 19) is 8-19."""
    return f"{window[0] + 1:g}-{window[1]:g}"


def _verdict(document: dict[str, Any], *, scope: str, pool: str | None) -> list[str]:
    """The verdict at each budget (``simulation.verdict``), written into ``document``, in words."""
    judged = verdicts(document, BUDGETS_PERCENT)
    document["verdict"] = {str(v.budget_percent): v.to_dict() for v in judged}
    return [
        f"-- verdict (rule: forecaster where <= {BETTER:g}x of static at the same GPU-hours on"
        f" one of > 5 min / mean / P95 and <= {NO_WORSE:g}x on the others)",
        *in_sentences(judged, scope=scope, pool=pool),
    ]


@dataclass
class _Curves:
    """The frontier's replayed points, by curve (static grows where the choices need it)."""

    reactive: Point
    oracle: Point
    static: list[Point]
    predictive: list[Point]
    burst: list[Point]
    continuation: dict[str, list[Point]]
    """Per gap (``f"{gap:g}"``), the continuation bound's points."""
    policies: dict[str, list[Point]] = field(default_factory=dict)
    """Other policies' points, by name (``policy_knobs``)."""

    @classmethod
    def of(cls, runs: Sequence[Run], results: Sequence[Point], gaps: Sequence[float]) -> _Curves:
        """The results of ``runs`` (in their order) gathered by curve."""
        curves: dict[str, list[Point]] = {}
        for run, result in zip(runs, results, strict=True):
            curves.setdefault(run.curve, []).append(result)
        (reactive,), (oracle,) = curves.pop("reactive"), curves.pop("oracle")
        policies = {
            curve.removeprefix(POLICY_CURVE): curves.pop(curve)
            for curve in list(curves)
            if curve.startswith(POLICY_CURVE)
        }
        return cls(
            reactive,
            oracle,
            curves.pop("static", []),
            sorted(curves.pop("predictive", []), key=lambda p: (p.knob, p.floor_gpus or 0)),
            curves.pop("burst", []),
            {f"{gap:g}": curves.pop(f"{gap:g}", []) for gap in gaps},
            policies,
        )

    def chosen_gpu_hours(self) -> list[float]:
        """The evaluation GPU-hours of the predictive and burst knobs each budget would choose:
        where static needs points for the comparison at the same GPU-hours."""
        return [
            point.eval.gpu_hours
            for points in (self.predictive, self.burst, *self.policies.values())
            for budget in BUDGETS_PERCENT
            if (
                point := choose(
                    points, reactive_gpu_hours=self.reactive.tune.gpu_hours, budget_percent=budget
                )
            )
            is not None
        ]

    def document(self) -> dict[str, Any]:
        """The JSON document's figures: every point on the evaluation window (top level) and on
        the tuning window (``tune``); the choices are filled in by ``_choices``."""
        document: dict[str, Any] = {
            "chosen": {},
            "chosen_burst": {},
            "chosen_continuation": {gap: {} for gap in self.continuation},
            "tune": {},
        }
        if self.policies:  # only then: the document of the built-in sweep stays as it was
            document["chosen_policies"] = {name: {} for name in self.policies}
        for window in ("eval", "tune"):
            target = document if window == "eval" else document["tune"]
            target["reactive"] = _m(getattr(self.reactive, window))
            target["oracle"] = _m(getattr(self.oracle, window))
            target["static"] = [_m(getattr(p, window), knob=p.knob) for p in self.static]
            target["predictive"] = [_m(getattr(p, window), **p.knobs) for p in self.predictive]
            target["burst"] = [_m(getattr(p, window), knob=p.knob) for p in self.burst]
            target["continuation"] = {
                gap: [_m(getattr(p, window), knob=p.knob) for p in points]
                for gap, points in self.continuation.items()
            }
            if self.policies:
                target["policies"] = {
                    name: [_m(getattr(p, window), knob=p.knob) for p in points]
                    for name, points in self.policies.items()
                }
        return document

    def tables(self) -> list[str]:
        """Every curve's table, evaluation against tuning."""
        lines = _tables(
            [
                ("reactive", [self.reactive]),
                ("oracle", [self.oracle]),
                ("static", self.static),
                ("predictive", self.predictive),
                ("burst", self.burst),
                *((f"continuation:{gap}", points) for gap, points in self.continuation.items()),
                *self.policies.items(),
            ],
            reactive=self.reactive,
        )
        if self.continuation:
            lines.append(
                "continuation: knows the rest of each submission (jobs at most GAP s apart) once"
                " its first pod exists, over a static floor - the bound of a model that reads"
                " bursts"
            )
        return lines


def _choices(curves: _Curves, document: dict[str, Any]) -> list[str]:
    """Each curve's knob chosen on the tuning window at each budget, judged on the evaluation
    window against static at the same GPU-hours; the choices are written into ``document``."""
    lines: list[str] = []
    chosen_into = [
        ("predictive", curves.predictive, document["chosen"]),
        ("burst", curves.burst, document["chosen_burst"]),
        *(
            (f"continuation:{gap} floor", points, document["chosen_continuation"][gap])
            for gap, points in curves.continuation.items()
        ),
        *(
            (name, points, document["chosen_policies"][name])
            for name, points in curves.policies.items()
        ),
    ]
    reactive, static = curves.reactive, curves.static
    for budget in BUDGETS_PERCENT:
        for label, points, into in chosen_into:
            point = choose(
                points, reactive_gpu_hours=reactive.tune.gpu_hours, budget_percent=budget
            )
            if point is None:
                lines.append(f"+{budget} %: no {label} knob fits this budget on the tuning window")
                continue
            into[str(budget)] = _m(point.eval, **point.knobs)
            overhead = point.eval.gpu_hours / reactive.eval.gpu_hours - 1
            lines.append(
                f"+{budget} % budget: {label} {point.label} (chosen on tuning) at {overhead:+.2%}"
                " GPU-hours in evaluation; against static at the same GPU-hours: "
                + ratios(point.eval, [p.eval for p in static])
            )
            if label == "predictive":
                lines.append(
                    f"+{budget} % budget: predictive against burst at the same GPU-hours: "
                    + ratios(point.eval, [p.eval for p in curves.burst])
                )
    return lines


LIVE_BURST = "burst-live"
"""The burst rule as the daemon runs it (``pools[].policy: burst``, ``app.replay_policies``)."""


def confirm_burst(
    document: dict[str, Any],
    *,
    reactive: Point,
    static: Sequence[Point],
    run: Callable[[list[float]], list[Point]],
) -> list[str]:
    """The burst rule's chosen points that qualify by the verdict's rule, replayed in the
    daemon's loop (``burst-live``: one run per alpha, none when no point qualifies) and written
    as ``chosen_burst_live`` where they kept within their budget on the tuning window: the
    verdict recommends burst only from those figures. The rule outside the loop never hands
    off; the loop does when its error budget burns (cluster04: mean wait 1.5x), so the rule's
    figures alone would recommend what the daemon would not deliver."""
    wanted: dict[float, list[int]] = {}
    for budget in BUDGETS_PERCENT:
        point = document["chosen_burst"].get(str(budget))
        if point is not None and family_verdict(document, budget, point).recommend == "forecaster":
            wanted.setdefault(float(point["knob"]), []).append(budget)
    document[BURST_LIVE] = {}
    lines = []
    for (alpha, budgets), live in zip(
        wanted.items(), run(list(wanted)) if wanted else [], strict=True
    ):
        for budget in budgets:
            head = f"+{budget} % budget: burst {alpha:g} in the daemon's loop ({LIVE_BURST})"
            if not within_budget(
                as_candidate(alpha, live.tune),
                reactive_gpu_hours=reactive.tune.gpu_hours,
                budget_percent=budget,
            ):
                lines.append(f"{head} spent over the budget on the tuning window: not recommended")
                continue
            document[BURST_LIVE][str(budget)] = _m(live.eval, knob=alpha)
            overhead = live.eval.gpu_hours / reactive.eval.gpu_hours - 1
            lines.append(
                f"{head} at {overhead:+.2%} GPU-hours in evaluation; against static at the same"
                " GPU-hours: " + ratios(live.eval, [p.eval for p in static])
            )
    return lines


def _kept(document: dict[str, Any], done: Sequence[tuple[Run, Point]]) -> dict[str, Any]:
    """An interrupted call's partial document with the runs finished before it (the sweep's,
    when the static extension or the burst rule's replay in the loop is interrupted)."""
    before = partial([r for r, _ in done], dict(enumerate(p for _, p in done)))
    return document | {
        "runs": document["runs"] + before["runs"],
        "finished": before["finished"] | document["finished"],
    }


def _tables(named: Sequence[tuple[str, Sequence[Point]]], *, reactive: Point) -> list[str]:
    """Every run on each window: GPU-hours against reactive, P95 and mean wait, shares."""
    lines = []
    for window in ("tune", "eval"):
        base = getattr(reactive, window).gpu_hours
        lines.append(
            f"-- {window} window (GPU-hours vs reactive, P95 / mean wait, > 60 s, > 5 min)"
        )
        for label, points in named:
            for p in points:
                m = getattr(p, window)
                knob = "" if label in ("reactive", "oracle") else f":{p.label}"
                lines.append(
                    f"{label + knob:>16} {m.gpu_hours / base - 1:+7.2%} {m.p95_wait_s:6.0f} s"
                    f" {m.mean_wait_s:7.1f} s {m.share_waiting_over_60s:7.1%}"
                    f" {m.share_waiting_over_5min:7.1%}"
                )
    return lines


class FrontierInterrupted(KeyboardInterrupt):
    """Ctrl-C during the sweep: ``document`` holds the runs that finished (``partial``)."""

    def __init__(self, document: dict[str, Any]) -> None:
        super().__init__()
        self.document = document


def partial(runs: Sequence[Run], finished: dict[int, Point]) -> dict[str, Any]:
    """The JSON of an interrupted sweep: ``{"partial": true, "runs": N, "finished": {label:
    {"tune": M, "eval": M}}}`` - no choice and no verdict (half a sweep chooses from half the
    points)."""
    return {
        "partial": True,
        "runs": len(runs),
        "finished": {
            runs[i].label: {"tune": _m(point.tune, **point.knobs), "eval": _m(point.eval)}
            for i, point in sorted(finished.items())
        },
    }


def _replayed(
    runs: Sequence[Run],
    *,
    jobs: JobTrace,
    make_policy: PolicyFactory,
    windows: dict[str, tuple[float, float]],
    workers: int,
    progress: Callable[[str], None] | None,
    follow: FloorChains | None = None,
    done: list[tuple[Run, Point]] | None = None,
) -> list[Point]:
    """``runs`` replayed and measured, a progress line as each finishes, and the runs
    ``follow`` adds as they finish (appended to ``runs``, which it holds); Ctrl-C raises
    ``FrontierInterrupted`` with those that finished. ``done``: the runs of earlier calls
    (each call adds its own), which an interrupted one keeps too."""

    def said_done(index: int, finished: int) -> None:
        if progress is not None:
            progress(f"{runs[index].label} done ({finished} of {len(runs)})")

    before = [] if done is None else done
    try:
        points = run_each(
            functools.partial(measured, jobs=jobs, make_policy=make_policy, windows=windows),
            runs,
            workers=workers,
            done=said_done,
            follow=follow,
            rank=started_in_turn,
        )
    except Interrupted as stop:
        raise FrontierInterrupted(_kept(partial(runs, stop.finished), before)) from None
    before.extend(zip(runs, points, strict=True))
    return points


def sweep(
    setup: ReplaySetup,
    *,
    static_knobs: Sequence[int],
    predictive_knobs: Sequence[float],
    floor_nodes: Sequence[int],
    burst_knobs: Sequence[float],
    continuation_gaps: Sequence[float],
    policy_knobs: Mapping[str, Sequence[float]] | None = None,
) -> list[Run]:
    """Every replay the frontier starts with: reactive, oracle, each static K, each predictive
    quantile at its smallest floor (``FloorChains`` adds the larger ones as they are worth it),
    each burst alpha, each continuation GAP over each static K, and each other policy at each
    of its knobs."""
    per_node = setup.twin.gpus_per_node
    return [
        Run("reactive", "reactive", 0, setup),
        Run("oracle", "oracle", 0, setup),
        *(Run("static", f"static:{k}", k, setup) for k in static_knobs),
        *(
            Run("predictive", "predictive", q, setup.at_point(q, n * per_node), n * per_node)
            for q in predictive_knobs
            for n in sorted(set(floor_nodes))[:1]  # the larger floors follow (``FloorChains``)
        ),
        *(Run("burst", f"burst:{a:g}", a, setup) for a in burst_knobs),
        *(
            Run(f"{gap:g}", f"continuation:{gap:g}", k, setup.at_point(setup.plan_quantile, k))
            for gap in continuation_gaps
            for k in static_knobs
        ),
        *(
            Run(POLICY_CURVE + name, f"{name}:{k:g}", k, setup)
            for name, knobs in (policy_knobs or {}).items()
            for k in knobs
        ),
    ]


class FloorChains:
    """``run_each``'s ``follow`` for predictive's floors: at each quantile the floors are
    replayed from the smallest up, the next once the last one's tuning GPU-hours are known to
    be within the largest budget (``core.operating_point.larger_floor_worth_trying``, the rule
    the training job's choice skips floors by). A larger floor only costs more, so one past
    every budget could never be chosen: the choices are those of the whole grid, for fewer
    replays. Reactive's GPU-hours are the budget's base; until they are known, finished floors
    wait. The runs it adds are appended to ``runs`` (the list the sweep's labels come from)."""

    def __init__(self, runs: list[Run], setup: ReplaySetup, *, floor_nodes: Sequence[int]) -> None:
        self.runs = runs
        self.setup = setup
        per_node = setup.twin.gpus_per_node
        self.floors = [n * per_node for n in sorted(set(floor_nodes))]
        self.reactive_gpu_hours: float | None = None
        self.waiting: list[tuple[int, Point]] = []

    def __call__(self, index: int, point: Point) -> list[Run]:
        """The runs worth adding now that ``runs[index]`` finished as ``point``."""
        if self.runs[index].curve == "reactive":
            self.reactive_gpu_hours = point.tune.gpu_hours
        elif self.runs[index].curve == "predictive":
            self.waiting.append((index, point))
        if self.reactive_gpu_hours is None:
            return []
        more = [run for i, p in sorted(self.waiting) if (run := self._next(self.runs[i], p))]
        self.waiting.clear()
        self.runs.extend(more)
        return more

    def _next(self, run: Run, point: Point) -> Run | None:
        floor = run.floor or 0
        larger = [f for f in self.floors if f > floor]
        if not larger or self.reactive_gpu_hours is None:
            return None
        if not larger_floor_worth_trying(
            as_candidate(run.knob, point.tune, floor_gpus=floor),
            reactive_gpu_hours=self.reactive_gpu_hours,
            budget_percent=max(BUDGETS_PERCENT),
        ):
            return None
        q, nxt = run.knob, larger[0]
        return Run("predictive", "predictive", q, self.setup.at_point(q, nxt), nxt)


STARTED_IN_TURN = {"reactive": 0, "predictive": 1, "oracle": 2, "burst": 3, "static": 4}
"""The order runs start in with several workers: reactive (its GPU-hours let the floor chains
go on), the daemon's loop and its chains, the rules, static - the long ones first, so the short
ones fill the workers at the end rather than one long run alone (the figures do not depend on
it). Anything else - continuation bounds, other policies - with the rules."""


def started_in_turn(run: Run) -> int:
    """``run_each``'s ``rank`` for the sweep (``STARTED_IN_TURN``)."""
    return STARTED_IN_TURN.get(run.curve, STARTED_IN_TURN["oracle"])


POLICY_CURVE = "policy:"
"""The curve of a policy swept by ``policy_knobs``: this prefix and its name."""

MAX_EXTENSIONS = 4
"""Rounds of static K added at most to bracket the chosen points (each half again the largest
K): past that the verdict says the point is outside the sweep."""


def extend_static(
    static: list[Point],
    targets: Sequence[float],
    *,
    run: Callable[[Sequence[int]], list[Point]],
    gpus_per_node: int,
) -> list[Point]:
    """The static curve, extended until it brackets every chosen point's evaluation GPU-hours
    (``targets``): while one spends more than the largest K, ``run`` the next K - half again
    the largest, in whole nodes - for at most ``MAX_EXTENSIONS`` rounds. A point judged against
    static is then never outside the curve (``verdict`` would refuse to extrapolate)."""
    curve = sorted(static, key=lambda p: p.knob)
    for _ in range(MAX_EXTENSIONS):
        if not curve or not targets or max(targets) <= max(p.eval.gpu_hours for p in curve):
            break
        largest = int(curve[-1].knob)
        step = max(gpus_per_node, -(-largest // 2 // gpus_per_node) * gpus_per_node)
        curve += run([largest + step])
    return curve


@dataclass(frozen=True)
class Run:
    """One replay of the sweep: the curve it belongs to (a continuation bound's: its GAP), the
    policy's name, its knob and setup (predictive's floor)."""

    curve: str
    name: str
    knob: float
    setup: ReplaySetup
    floor: int | None = None

    @property
    def label(self) -> str:
        """``static:32`` or ``predictive P80+32``."""
        return (
            self.name if self.floor is None else f"{self.name} {point_label(self.knob, self.floor)}"
        )


def measured(
    run: Run,
    *,
    jobs: JobTrace,
    make_policy: PolicyFactory,
    windows: dict[str, tuple[float, float]],
) -> Point:
    """Replay ``run`` (in a worker process when there are several) and measure both windows."""
    policy = make_policy(run.name, run.setup, jobs=jobs)
    record = replay(jobs, policy, setup=run.setup).record
    by_window = {
        key: measure(
            record,
            window=window,
            price_on_demand=run.setup.price_on_demand,
            price_spot=run.setup.price_spot,
            handoffs=getattr(policy, "handoffs", 0),  # over the whole run, not the window
        )
        for key, window in windows.items()
    }
    return Point(run.knob, by_window["tune"], by_window["eval"], run.floor)


def ratios(point: ReplayMetrics, curve: Sequence[ReplayMetrics]) -> str:
    """``point`` over ``curve`` interpolated at its GPU-hours, per compared metric."""
    out = []
    for key in COMPARED:
        other = interpolate(curve, point.gpu_hours, key=key)
        mine = float(getattr(point, key))
        if other is None:
            out.append(f"{key} n/a (outside the curve)")
        elif other == 0:
            out.append(f"{key} {mine:g} vs 0")
        else:
            out.append(f"{key} {mine / other:.2f}x")
    return ", ".join(out)
