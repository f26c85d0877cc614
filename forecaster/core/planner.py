"""Decide how many GPUs to prewarm per pool: data in, a plan with a reason for every number out.

Per pool (see ``PoolPlan``):

0. Warm nodes are kept from consolidation by ``karpenter.sh/do-not-disrupt`` on the placeholders
   themselves (the actuator's job). Only pools that opt in (``protect_nodepool``) also get the
   NodePool-wide pause: applied while their target is above zero, held (not extended) until its
   deadline after the target drops to zero - hysteresis, so a flapping target does not flap
   the NodePool - and restored at once on a hand-off (``NodePoolAction``).
1. *Needed* = P95 demand at the lead time minus what real pods already ask for and minus spare
   capacity that is up or coming, rounded **up** to whole placeholders, never negative; at
   least the pool's ``floor_gpus`` (a constant warm floor under the forecast).
   While nodes launch for unbound placeholders, the pool keeps its bound placeholders and
   those until the nodes are up (deleting them would not stop the launch: ``_in_flight_kept``).
2. Mode overrides: handed-off or recovering pools get only the trusted announced work due
   (reactive scaling owns the forecast's part), and every pool gets 0 while the on-call kill
   switch is on (``halted``); on stale
   data nothing new is prewarmed - existing prewarm is held for ``hold_seconds``, then 0.
   While Karpenter cannot launch the pool's nodes (``launch_problem``), nothing new either:
   more pending placeholders would not launch, and only prewarm on Ready nodes is warm.
3. Per-pool caps: ``max_prewarm_gpus`` and the NodePool's own GPU limit minus what is in use
   (Karpenter can overshoot its limit in a fast scale-out, so we never lean on it). A NodePool
   without a GPU limit gets nothing unless explicitly allowed. Where Kueue gates the pool, what
   its quota could still admit (``core.kueue``) plus the announced workloads already holding
   quota (their quota is used, their nodes not yet).
4. Shared caps, allocated one placeholder at a time round-robin over the pools (fair, and a pool
   whose forecast grows never gets less): total prewarm GPUs, cost per hour, and GPU-hours per
   rolling day (each GPU charged its commitment up front). Caps are charged whole nodes
   (``billed_gpus``): what the cloud bills, not the placeholders' share of it.

Forecast-only pools are planned for the report but never act and spend no shared budget.
Caps round *down* to whole placeholders, so no cap is ever exceeded.

``scripts/mutation_check.py`` pins exact lines of this module (it breaks them on purpose): a
change to a pinned line updates the mutation's strings there, never drops the mutation.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from forecaster.core.cluster import DemandForecast, PoolSnapshot, whole_node_gpus
from forecaster.core.notice import AnnouncedItem, due_items
from forecaster.core.policy import Budgets, PoolPolicy


class NodePoolAction(StrEnum):
    """What to do with the pool's opt-in NodePool consolidation pause."""

    PAUSE = "pause"
    """Apply it, or extend its deadline (prewarming now)."""
    HOLD = "hold"
    """Leave it until its deadline (hysteresis: prewarm just ended and may come back)."""
    RESTORE = "restore"
    """Put the NodePool back (no-op when we hold no pause)."""


class Mode(StrEnum):
    """Who owns a pool's capacity right now."""

    PREDICTIVE = "predictive"
    FORECAST_ONLY = "forecast-only"
    HANDED_OFF = "handed-off"
    RECOVERING = "recovering"
    HALTED = "halted"
    """The on-call kill switch is on: every acting pool withdraws (``plan(halted=...)``)."""


@dataclass(frozen=True)
class PoolPlan:
    """The decision for one pool and why."""

    pool: str
    mode: Mode
    acts: bool
    demand_upper_gpus: float
    real_demand_gpus: int
    spare_gpus: int
    needed_gpus: int
    target_gpus: int
    placeholder_size_gpus: int
    """GPUs of one placeholder (the unit of every target)."""
    nodepool: NodePoolAction
    reasons: tuple[str, ...]

    @property
    def protect_nodepool(self) -> bool:
        """Is the NodePool meant to stay paused after this tick (pause or hold)?"""
        return self.nodepool is not NodePoolAction.RESTORE

    @property
    def placeholders(self) -> int:
        """How many placeholders of ``placeholder_size_gpus`` each make up the target."""
        return self.target_gpus // self.placeholder_size_gpus


@dataclass(frozen=True)
class Plan:
    """Decisions for every pool plus what the shared budgets allowed."""

    at: int
    pools: tuple[PoolPlan, ...]
    cost_per_hour: float
    gpu_hours_spent_last_day: float
    reasons: tuple[str, ...] = field(default=())

    @property
    def total_target_gpus(self) -> int:
        """Prewarm GPUs over all acting pools."""
        return sum(p.target_gpus for p in self.pools if p.acts)

    def pool(self, name: str) -> PoolPlan:
        """The plan of pool ``name``."""
        return next(p for p in self.pools if p.pool == name)


@dataclass(frozen=True)
class PoolInput:
    """Everything the planner knows about one pool."""

    policy: PoolPolicy
    snapshot: PoolSnapshot
    forecast: DemandForecast | None
    mode: Mode
    window_seconds: float = 0.0
    """The prewarm window (the forecast's horizon): announced work starting within it is
    covered now; 0 covers only work already due."""
    distrusted: Mapping[str, str] = field(default_factory=dict)
    """Notice sources whose items are not planned now, with why (``core.notice.NoticeLedger``)."""


@dataclass
class _Draft:
    """A pool's plan while the shared budgets are being handed out."""

    source: PoolInput
    needed: int
    cap: int
    reasons: list[str]
    target: int = 0


def plan(
    inputs: Sequence[PoolInput],
    *,
    budgets: Budgets,
    spent_gpu_hours_last_day: float,
    now: int,
    halted: str | None = None,
) -> Plan:
    """Plan every pool; see the module docstring for the rules.

    ``halted`` (the kill switch's reason): every pool that acts withdraws its prewarm and
    restores its NodePool; forecast-only pools are still planned for the report.
    """
    if halted is not None:
        inputs = [
            item if item.policy.forecast_only else dataclasses.replace(item, mode=Mode.HALTED)
            for item in inputs
        ]
    drafts = [_draft(item, now=now) for item in inputs]
    # handed-off/recovering pools act too: they withdraw, or cover announced work on budget
    sharing = (Mode.PREDICTIVE, Mode.HANDED_OFF, Mode.RECOVERING)
    acting = [d for d in drafts if d.source.mode in sharing and not _observe_only(d)]
    for d in drafts:
        if d not in acting:
            d.target = d.cap  # 0 unless forecast-only: then what it would do within its own caps
    shared_reasons = _allocate(acting, budgets=budgets, spent=spent_gpu_hours_last_day)
    if halted is not None:
        shared_reasons.insert(0, f"kill switch on ({halted}): every prewarm withdrawn")
    pools = tuple(_finish(d, acts=not _observe_only(d), now=now) for d in drafts)
    cost = sum(
        billed_gpus(d.source.policy, p.target_gpus) * d.source.policy.price_per_gpu_hour
        for p, d in zip(pools, drafts, strict=True)
        if p.acts
    )
    return Plan(
        at=now,
        pools=pools,
        cost_per_hour=cost,
        gpu_hours_spent_last_day=spent_gpu_hours_last_day,
        reasons=tuple(shared_reasons),
    )


def _observe_only(d: _Draft) -> bool:
    """Forecast-only by configuration (or handed in as that mode): plan, never act."""
    return d.source.policy.forecast_only or d.source.mode is Mode.FORECAST_ONLY


def _draft(item: PoolInput, *, now: int) -> _Draft:
    policy, snap, forecast = item.policy, item.snapshot, item.forecast
    reasons: list[str] = []
    unit = policy.placeholder_size_gpus
    if snap.problem is not None:
        return _Draft(item, 0, 0, [f"cannot observe this pool ({snap.problem}): prewarm 0"])
    if forecast is None:
        return _Draft(item, 0, 0, ["no forecast for this pool: nothing to prewarm"])
    demand = planned_demand(
        snap, forecast, window_seconds=item.window_seconds, distrusted=item.distrusted
    )
    if demand > forecast.upper_gpus:
        reasons.append(
            _known_work(
                snap, demand, window_seconds=item.window_seconds, distrusted=item.distrusted
            )
        )
    reasons += _distrusted(snap, item)
    shortfall = demand - snap.real_demand_gpus - snap.spare_gpus
    needed = max(0, math.ceil(shortfall / unit - 1e-9)) * unit if math.isfinite(shortfall) else 0
    reasons.append(
        f"{forecast.upper_label} demand {forecast.upper_gpus:.1f} GPUs at lead time"
        f" ({forecast.model}{': ' + forecast.basis if forecast.basis else ''}) vs"
        f" {snap.real_demand_gpus} requested now + {snap.spare_gpus} spare: need {needed}"
        f" ({needed // unit} x {unit}-GPU placeholder)"
    )
    floor = math.ceil(policy.floor_gpus / unit) * unit
    if floor > needed:
        needed = floor
        reasons.append(f"floor of {policy.floor_gpus} GPUs: prewarm at least {floor}")
    if item.mode is Mode.HALTED:
        return _Draft(item, needed, 0, [*reasons, "kill switch on: prewarm 0, nothing new"])
    if item.mode in (Mode.HANDED_OFF, Mode.RECOVERING):
        wanted = _announced_only(item, reasons)
        if not wanted:
            return _Draft(item, needed, 0, reasons)
    else:
        wanted = _in_flight_kept(needed, snap, unit, reasons)
    cap = _held(wanted, item, age=now - forecast.data_end, reasons=reasons)
    if item.mode is not Mode.PREDICTIVE:  # stale data holds the existing only up to the due
        cap = min(cap, wanted)
    cap = _cap(cap, policy.max_prewarm_gpus, unit, "pool max_prewarm_gpus", reasons)
    cap = _cap(cap, _limit_room(policy, snap, reasons), unit, "NodePool GPU limit", reasons)
    if snap.kueue is not None:  # work that quota would hold back needs no warm node
        held = _trusted_due(snap, window_seconds=item.window_seconds, distrusted=item.distrusted)
        room = snap.kueue.admissible_gpus + sum(i.gpus for i in held if i.in_history)
        cap = _cap(cap, room, unit, f"Kueue {snap.kueue.scope} quota", reasons)
    return _Draft(item, needed, cap, reasons)


def _announced_only(item: PoolInput, reasons: list[str]) -> int:
    """A handed-off (or recovering) pool's prewarm: the trusted sources' announced work due
    within the window, less spare - never the forecast. The hand-off judged the forecast of
    unannounced work (``core.error_budget``); announced work has its own trust rule
    (``core.notice``), so reactive scaling owns the rest of the pool, not this."""
    snap, unit = item.snapshot, item.policy.placeholder_size_gpus
    due = _trusted_due(snap, window_seconds=item.window_seconds, distrusted=item.distrusted)
    gpus = sum(i.gpus for i in due if not i.in_history)
    wanted = max(0, math.ceil((gpus - snap.spare_gpus) / unit - 1e-9)) * unit
    mode = item.mode.value
    if not wanted:
        reasons.append(f"{mode}: reactive scaling owns the pool, prewarm 0")
    else:
        reasons.append(
            f"{mode}: reactive scaling owns the pool's forecast; announced work due"
            f" ({gpus} GPUs, {snap.spare_gpus} spare) is still covered: {wanted}"
        )
    return wanted


def _in_flight_kept(needed: int, snap: PoolSnapshot, unit: int, reasons: list[str]) -> int:
    """``needed``, or more while nodes launch for our unbound placeholders: deleting those
    placeholders does not stop the launch, and freeing a bound one instead lets the unbound
    one bind there - either way a node comes up empty with its image not pulled, and the
    work the prewarm was for lands on it cold. So the pool keeps every bound placeholder and
    those the launching nodes will take until they are up; a later tick scales down."""
    flying = snap.in_flight_placeholder_gpus
    kept = (snap.prewarm_gpus - snap.unbound_placeholder_gpus + flying) // unit * unit
    if not flying or kept <= needed:
        return needed
    reasons.append(
        f"{flying} GPUs of placeholders wait for nodes already launching: keeping {kept} until"
        " those nodes are up (else they come up empty and cold)"
    )
    return kept


def _held(needed: int, item: PoolInput, *, age: int, reasons: list[str]) -> int:
    """The prewarm the data's age and the cloud's capacity allow: nothing new on stale data
    (the existing held for ``hold_seconds``, then 0) nor while launches fail (the existing)."""
    policy, snap, unit = item.policy, item.snapshot, item.policy.placeholder_size_gpus
    cap = needed
    if age > policy.stale_after_seconds:
        held = snap.prewarm_gpus // unit * unit
        if age <= policy.stale_after_seconds + policy.hold_seconds:
            cap = held
            reasons.append(f"data {age}s old (stale): no new prewarm, holding the existing {held}")
        else:
            cap = 0
            reasons.append(f"data {age}s old, stale beyond the {policy.hold_seconds}s hold: 0")
    if snap.launch_problem is not None:  # more pending placeholders would not launch either
        held = snap.prewarm_gpus // unit * unit
        ready = snap.ready_placeholder_gpus
        warm = f"{ready} of {snap.prewarm_gpus}" if ready is not None else "unknown"
        reasons.append(
            f"no capacity at the cloud ({snap.launch_problem}): no new prewarm, holding the"
            f" existing {held}; prewarm warm: {warm} GPUs"
        )
        cap = min(cap, held)
    return cap


def planned_demand(
    snap: PoolSnapshot,
    forecast: DemandForecast,
    *,
    window_seconds: float,
    distrusted: Mapping[str, str] | None = None,
) -> float:
    """The demand the plan acts on: the work known to be coming added to the forecast of the
    rest. The forecast learnt from histories that leave announced work's pods out (the sources
    mark them: ``actuators.notice``, the twin's flag), so it is of unannounced work, and the
    announced work (``announced_gpus``) comes on top of it - counted once. Items whose pods stay
    in the histories (``in_history``: Kueue workloads holding quota, no pods yet) are of
    unannounced work: they raise its part to at least what runs now plus them (max, not sum:
    the forecast learnt from their kind). With nothing known the forecast alone, as without
    notice. Items of ``distrusted`` sources are left out. The error budget judges the
    unannounced part (this less ``announced_gpus``) against the unannounced history: a burst
    Kueue announced and the plan covered is no miss."""
    announced = announced_gpus(snap, window_seconds=window_seconds, distrusted=distrusted)
    due = _trusted_due(snap, window_seconds=window_seconds, distrusted=distrusted or {})
    reserved = sum(i.gpus for i in due if i.in_history)
    if not (reserved or announced):
        return forecast.upper_gpus
    unannounced_now = snap.real_demand_gpus - snap.announced_real_gpus + reserved
    return float(announced) + max(forecast.upper_gpus, unannounced_now)


def announced_gpus(
    snap: PoolSnapshot, *, window_seconds: float, distrusted: Mapping[str, str] | None = None
) -> int:
    """GPUs of announced work the plan covers: running or pending now, and the trusted
    sources' items due within ``window_seconds`` (not those ``in_history``: the forecast's)."""
    due = _trusted_due(snap, window_seconds=window_seconds, distrusted=distrusted or {})
    return snap.announced_real_gpus + sum(i.gpus for i in due if not i.in_history)


def _trusted_due(
    snap: PoolSnapshot, *, window_seconds: float, distrusted: Mapping[str, str]
) -> tuple[AnnouncedItem, ...]:
    """The items due within ``window_seconds`` that the plan covers, soonest first: of trusted
    sources and namespaces (``AnnouncedItem.trust_key``), and not left out by their own key (a
    namespace past its share of the prewarm GPUs: ``core.notice.over_gpu_share``)."""
    due = due_items(snap.announced, snap.observed_at, within_seconds=window_seconds)
    return tuple(i for i in due if i.trust_key not in distrusted and i.key not in distrusted)


def _distrusted(snap: PoolSnapshot, item: PoolInput) -> list[str]:
    """A reason per distrusted source (or source and namespace) that announced work due now,
    and per namespace past its share of the prewarm GPUs: what was left out, why."""
    due = due_items(snap.announced, snap.observed_at, within_seconds=item.window_seconds)
    left: dict[str, int] = {}
    for i in due:
        if i.trust_key in item.distrusted:
            label = f"notice source {i.trust_key} not trusted ({item.distrusted[i.trust_key]})"
        elif i.key in item.distrusted:
            label = item.distrusted[i.key]
        else:
            continue
        left[label] = left.get(label, 0) + i.gpus
    return [
        f"{label}: its {gpus} GPUs due not planned" for label, gpus in sorted(left.items()) if gpus
    ]


def _known_work(
    snap: PoolSnapshot, demand: float, *, window_seconds: float, distrusted: Mapping[str, str]
) -> str:
    """The reason naming the known work that raised the plan's demand."""
    parts = []
    every = _trusted_due(snap, window_seconds=window_seconds, distrusted=distrusted)
    held = [i for i in every if i.in_history]
    if held:
        parts.append(
            f"{'/'.join(sorted({i.source for i in held}))}: {sum(i.gpus for i in held)} GPUs"
            " hold their place (quota) but have no pods yet"
            f" ({', '.join(i.key for i in held[:3])}{'...' if len(held) > 3 else ''})"
        )
    due = [i for i in every if not i.in_history]
    if due:
        shown = "; ".join(
            f"{i.key} ({i.gpus} GPUs, in {max(0, i.earliest_start - snap.observed_at)}s)"
            for i in due[:3]
        )
        more = f"; {len(due) - 3} more" if len(due) > 3 else ""
        parts.append(
            f"announced: {sum(i.gpus for i in due)} GPUs due within {window_seconds:.0f}s"
            f" ({shown}{more})"
        )
    if snap.announced_real_gpus:
        parts.append(
            f"{snap.announced_real_gpus} GPUs of announced work run now (not in the forecast)"
        )
    return f"{'; '.join(parts)}: demand {demand:.0f} (known work + the forecast of the rest)"


def _limit_room(policy: PoolPolicy, snap: PoolSnapshot, reasons: list[str]) -> int:
    """GPUs the NodePool limit leaves for placeholders (our own placeholders' nodes re-usable)."""
    if snap.nodepool_limit_gpus is None:
        if policy.allow_unlimited_nodepool:
            return 1 << 30
        reasons.append(
            f"NodePool has no {policy.resource} limit: refusing to prewarm an uncapped pool"
        )
        return 0
    in_use = snap.allocatable_gpus + snap.launching_gpus - snap.prewarm_gpus
    return max(0, snap.nodepool_limit_gpus - max(in_use, snap.real_demand_gpus))


def _cap(value: int, limit: int, unit: int, what: str, reasons: list[str]) -> int:
    allowed = max(0, limit) // unit * unit
    if value > allowed:
        reasons.append(f"capped by {what} ({limit} GPUs): {value} -> {allowed}")
        return allowed
    return value


def billed_gpus(policy: PoolPolicy, prewarm_gpus: int) -> int:
    """GPUs the cloud bills for ``prewarm_gpus`` of placeholders: whole nodes.

    Placeholders pack onto nodes, so a 1-GPU placeholder that launches an 8-GPU node costs the
    whole node; the caps charge that, not the placeholder's share.
    """
    return whole_node_gpus(prewarm_gpus, gpus_per_node=policy.gpus_per_node)


def _allocate(acting: list[_Draft], *, budgets: Budgets, spent: float) -> list[str]:
    """Hand out placeholders round-robin within the shared caps; return why any pool got less.

    Every cap is charged the whole nodes a target needs (``billed_gpus``), not the placeholders.
    """
    gpus_left = budgets.max_total_prewarm_gpus
    cost_left = budgets.max_cost_per_hour
    commitment_hours = budgets.commitment_seconds / 3600
    gpu_hours_left = budgets.max_prewarm_gpu_hours_per_day - spent
    blocked: dict[str, str] = {}
    active = [d for d in acting if d.cap > 0]
    while active:
        still = []
        for d in active:
            policy = d.source.policy
            unit = policy.placeholder_size_gpus
            extra = billed_gpus(policy, d.target + unit) - billed_gpus(policy, d.target)
            price = extra * policy.price_per_gpu_hour
            why = None
            if extra > gpus_left:
                why = f"capped by total prewarm GPUs ({budgets.max_total_prewarm_gpus})"
            elif price > cost_left + 1e-9:
                why = f"capped by cost per hour (${budgets.max_cost_per_hour:.2f}/h)"
            elif extra * commitment_hours > gpu_hours_left + 1e-9:
                why = (
                    f"capped by GPU-hours/day budget ({spent:.1f} of"
                    f" {budgets.max_prewarm_gpu_hours_per_day:g} spent, each GPU charged"
                    f" {commitment_hours:.2f} h ahead)"
                )
            if why:
                blocked[policy.pool] = why
                continue
            d.target += unit
            gpus_left -= extra
            cost_left -= price
            gpu_hours_left -= extra * commitment_hours
            if d.target < d.cap:
                still.append(d)
        active = still
    for d in acting:
        if d.source.policy.pool in blocked:
            d.reasons.append(f"{blocked[d.source.policy.pool]}: {d.cap} -> {d.target}")
    return sorted(set(blocked.values()))


def _finish(d: _Draft, *, acts: bool, now: int) -> PoolPlan:
    item = d.source
    mode = Mode.FORECAST_ONLY if not acts else item.mode
    reasons = list(d.reasons)
    if not acts and mode is Mode.FORECAST_ONLY:
        reasons.append(f"forecast-only: would prewarm {d.target} GPUs, performs no action")
    nodepool = _nodepool_action(d, acts=acts, mode=mode, now=now)
    if nodepool is NodePoolAction.PAUSE:
        reasons.append("NodePool: consolidation paused while prewarming (opt-in, with a deadline)")
    elif nodepool is NodePoolAction.HOLD:
        reasons.append(
            f"NodePool: pause held until its deadline ({item.snapshot.paused_until}),"
            " prewarm may come back (hysteresis)"
        )
    elif item.policy.protect_nodepool:
        reasons.append("NodePool: original settings")
    elif d.target > 0:
        reasons.append("warm nodes kept by karpenter.sh/do-not-disrupt on the placeholders")
    return PoolPlan(
        pool=item.policy.pool,
        mode=mode,
        acts=acts,
        demand_upper_gpus=item.forecast.upper_gpus if item.forecast else math.nan,
        real_demand_gpus=item.snapshot.real_demand_gpus,
        spare_gpus=item.snapshot.spare_gpus,
        needed_gpus=d.needed,
        target_gpus=d.target,
        placeholder_size_gpus=item.policy.placeholder_size_gpus,
        nodepool=nodepool,
        reasons=tuple(reasons),
    )


def _nodepool_action(d: _Draft, *, acts: bool, mode: Mode, now: int) -> NodePoolAction:
    """Pause while prewarming; after it, hold until the deadline; else restore.

    Only for pools that opt in; a hand-off (or any non-predictive mode) restores at once.
    """
    item = d.source
    if not (item.policy.protect_nodepool and acts and mode is Mode.PREDICTIVE):
        return NodePoolAction.RESTORE
    if d.target > 0:
        return NodePoolAction.PAUSE
    until = item.snapshot.paused_until
    return NodePoolAction.HOLD if until is not None and now < until else NodePoolAction.RESTORE
