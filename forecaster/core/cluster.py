"""What the adapters observe: per-pool GPU capacity and demand, in plain numbers."""

from __future__ import annotations

from dataclasses import dataclass

from forecaster.core.kueue import KueueRoom
from forecaster.core.notice import AnnouncedItem, SourceStatus


@dataclass(frozen=True)
class MeasuredLead:
    """What bringing capacity up took lately in a pool (medians over recent launches).

    The lead a prewarm must cover is measured, not only configured: ``doctor`` and the start-up
    guardrails compare the two, and the endpoint shows both."""

    provisioning_seconds: float
    """Node created -> Ready (launch, boot, join the cluster)."""
    startup_seconds: float | None
    """A real pod's first start on a node launched for it: scheduled -> containers ready (image
    pull + start); None when no such pod was seen."""
    launches: int
    """Nodes measured (pods, for Karpenter's figures)."""
    origin: str = "daemon"
    """Who measured it: ``daemon`` (this pool's launches) or ``karpenter`` (its cluster-wide
    pod provisioning histograms, ``sources.prometheus.KARPENTER_LEAD_QUERY``)."""

    @property
    def total_seconds(self) -> float:
        """Provisioning + startup: what a pod waits without prewarm."""
        return self.provisioning_seconds + (self.startup_seconds or 0.0)


ARRIVAL_WINDOWS_SECONDS = (60, 300, 900, 3600)
"""The trailing windows over which pods created lately are counted (``RecentArrivals``)."""


@dataclass(frozen=True)
class RecentArrivals:
    """GPUs requested by real pods created in each of the last ``ARRIVAL_WINDOWS_SECONDS``.

    Jobs arrive in batch submissions that land within one lead time: what was created in the
    last minutes says more about the next ones than the level of demand does. Read from the API
    server at each decision (a scrape every 30-60 s is too slow for a 15 s decision)."""

    gpus: tuple[int, ...]
    pods: tuple[tuple[str, int], ...] = ()
    """(uid or namespace/name, GPUs) of each real pod created in the longest window: what the
    daemon's arrivals counter counts once per pod (``service.metrics``)."""

    def __post_init__(self) -> None:
        if len(self.gpus) != len(ARRIVAL_WINDOWS_SECONDS):
            raise ValueError(f"RecentArrivals needs one count per {ARRIVAL_WINDOWS_SECONDS} s")
        if any(g < 0 for g in self.gpus):
            raise ValueError("arrival counts must be >= 0")


@dataclass(frozen=True)
class PoolSnapshot:
    """One NodePool as seen at ``observed_at`` (epoch seconds).

    Real pods and our placeholders are counted apart: placeholders are prewarm, not demand.
    """

    pool: str
    observed_at: int
    allocatable_gpus: int
    """GPUs on Ready nodes of the pool."""
    launching_gpus: int
    """GPUs on nodes that exist but are not Ready yet (Karpenter is bringing them up)."""
    running_gpus: int
    """GPUs requested by running real pods."""
    pending_gpus: int
    """GPUs requested by real pods waiting to be scheduled."""
    prewarm_gpus: int
    """GPUs our prewarm holds: placeholder requests (running or pending) and buffer headroom."""
    nodepool_limit_gpus: int | None
    """The NodePool's ``spec.limits`` on the pool's resource; None when it has none."""
    stranded_gpus: int = 0
    """Free GPUs on nodes that already run pods: a job needing a whole node cannot use them."""
    empty_gpus: int = 0
    """GPUs of Ready nodes that run no pod at all (not even ours): Karpenter consolidates them
    within ``consolidateAfter``, so they are not spare - a placeholder that lands on one keeps
    it warm with no launch (the way to keep nodes freed during a burst when more is coming)."""
    held_gpus: int | None = None
    """GPUs billed because of us (whole nodes we alone occupy or keep; see the observer);
    None when unknown, then the placeholders' own GPUs are charged."""
    paused_until: int | None = None
    """Deadline of our opt-in NodePool consolidation pause, when one is in place."""
    problem: str | None = None
    """Why this pool could not be observed (a malformed object); the planner then withdraws."""
    kueue: KueueRoom | None = None
    """What Kueue could still admit onto this pool; None when Kueue does not gate it."""
    launch_problem: str | None = None
    """Karpenter recently failed to launch nodes for this pool (no capacity at the cloud)."""
    ready_placeholder_gpus: int | None = None
    """Prewarm that is actually warm: placeholder GPUs on Ready nodes (None: not observed)."""
    measured_lead: MeasuredLead | None = None
    """The pool's launches of the last day, measured (None: nothing launched lately)."""
    arrivals: RecentArrivals | None = None
    """GPUs of real pods created lately (None: not observed)."""
    recent_images: tuple[str, ...] = ()
    """Images the pool's real pods of the last hour ran that a placeholder may pull (no pull
    secret needed), most GPUs first: prewarm pulls them, so warm is warm for the workload."""
    announced: tuple[AnnouncedItem, ...] = ()
    """GPU work the cluster announced for this pool whose pods do not exist yet
    (``core.notice``, read by ``actuators.notice``)."""
    announced_real_gpus: int = 0
    """Of ``real_demand_gpus``, the GPUs of pods of announced work (a CronJob's run, a JobSet's
    waiting stage): its histories leave them out, so the forecast is of unannounced work only."""
    announced_running: tuple[tuple[str, str, int], ...] = ()
    """(source, item key, GPUs) of the bound pods of announced work: linked to the notice each
    item gave, in GPU-hours (``core.notice_use``). Empty in replay: the twin counts no pods."""
    announced_present: tuple[tuple[str, str], ...] = ()
    """(source, item key) of the announced items whose pods exist on the pool now - pending,
    gated or running: those items came (``core.notice.NoticeLedger``)."""
    unbound_placeholder_gpus: int = 0
    """Of ``prewarm_gpus``, placeholder GPUs whose pods have no node yet (waiting for one)."""
    signals: tuple[tuple[str, float], ...] = ()
    """Readings of the registered signal readers, ``(name, value)`` in registration order
    (``app.signals``): on the status page, and for a plan rule that reads one (``signal``)."""

    def signal(self, name: str) -> float | None:
        """The reading of signal ``name`` (None: no reader of that name, or no reading)."""
        return dict(self.signals).get(name)

    @property
    def billed_gpus(self) -> int:
        """What the spend ledger charges for this pool: ``held_gpus`` when known."""
        return self.prewarm_gpus if self.held_gpus is None else self.held_gpus

    @property
    def real_demand_gpus(self) -> int:
        """GPUs real pods ask for now (running + pending)."""
        return self.running_gpus + self.pending_gpus

    @property
    def in_flight_placeholder_gpus(self) -> int:
        """Unbound placeholder GPUs that nodes already launching will take: launching capacity
        no pending real pod claims (real pods are scheduled first). Deleting these placeholders
        does not stop the launch - the node would come up empty, its image not pulled."""
        unclaimed = max(0, self.launching_gpus - self.pending_gpus)
        return min(self.unbound_placeholder_gpus, unclaimed)

    @property
    def spare_gpus(self) -> int:
        """Capacity up or coming that no pod holds, not stranded on busy nodes, not about to go.

        Stranded GPUs are not counted: GPU jobs often need a whole node, and free GPUs scattered
        over busy nodes cannot host them, so counting them would under-prewarm. Empty Ready
        nodes are not counted either: consolidation removes them before the work they would
        serve arrives, unless a placeholder holds them - which is what the plan then asks for.
        """
        held = self.real_demand_gpus + self.prewarm_gpus + self.stranded_gpus + self.empty_gpus
        return max(0, self.allocatable_gpus + self.launching_gpus - held)


@dataclass(frozen=True)
class DemandForecast:
    """The forecast the planner acts on: demand quantiles at the pool's lead time."""

    pool: str
    p50_gpus: float
    upper_gpus: float
    data_end: int
    """Timestamp of the newest usable sample behind the forecast (staleness is judged on it)."""
    model: str
    quantile: float
    """The quantile ``upper_gpus`` is (``forecast.target_quantile``): what the plan covers."""
    peak: bool = False
    """The quantiles are of the *peak* demand over the window (now + the peak additional
    demand, ``forecasting.arrivals``), not of the demand at its end."""
    basis: str = ""
    """What the forecast rests on, for the plan's reasons (empty: the model name says it)."""

    @property
    def upper_label(self) -> str:
        """``P95`` for 0.95: how logs and reasons name the upper quantile."""
        return quantile_label(self.quantile)


def assumed_snapshot(
    *, pool: str, demand_gpus: float, gpus_per_node: int, limit_gpus: int | None, now: int
) -> PoolSnapshot:
    """A what-if cluster that exactly fits today's demand: no spare nodes, no placeholders.

    Used when there is no cluster to observe (``forecaster plan`` on a CSV, replays).
    """
    demand = max(0, round(demand_gpus))
    nodes = -(-demand // gpus_per_node)
    return PoolSnapshot(
        pool=pool,
        observed_at=now,
        allocatable_gpus=nodes * gpus_per_node,
        launching_gpus=0,
        running_gpus=demand,
        pending_gpus=0,
        prewarm_gpus=0,
        nodepool_limit_gpus=limit_gpus,
    )


def whole_node_gpus(gpus: int, *, gpus_per_node: int) -> int:
    """``gpus`` rounded up to whole nodes: GPUs are billed by the node they sit on."""
    return -(-gpus // gpus_per_node) * gpus_per_node if gpus_per_node > 0 else 0


def unobservable(pool: str, *, problem: str, now: int) -> PoolSnapshot:
    """A pool whose objects could not be read: nothing known, so nothing may be prewarmed."""
    return PoolSnapshot(
        pool=pool,
        observed_at=now,
        allocatable_gpus=0,
        launching_gpus=0,
        running_gpus=0,
        pending_gpus=0,
        prewarm_gpus=0,
        nodepool_limit_gpus=0,
        problem=problem,
    )


@dataclass(frozen=True)
class Skipped:
    """An object another team wrote that was passed over: unreadable, or asking more devices
    per pod than one node of its pool holds (it can never be placed: no demand, no notice)."""

    kind: str
    """``pods``, ``cronjobs``, ``jobsets``..."""
    name: str
    """``namespace/name``."""
    reason: str
    """``exceeds-node`` or ``unreadable``."""
    message: str


@dataclass(frozen=True)
class Unattributed:
    """Pending GPU pods of one namespace that no NodePool can serve, as Karpenter would judge."""

    namespace: str
    pods: int
    gpus: int


@dataclass(frozen=True)
class ClaimedPods:
    """Live pods of one namespace that ask for devices through Dynamic Resource Allocation
    (``spec.resourceClaims``): not prewarmed - Karpenter does not provision for DRA claims."""

    namespace: str
    pool: str | None
    """The NodePool of the node it runs on, or the one it would wait for; None: none fits."""
    pods: int

    NOT_PREWARMED = "not prewarmed (Karpenter does not provision for DRA claims)"


class Observation(dict[str, PoolSnapshot]):
    """Snapshots by pool, plus what the cluster holds that belongs to no pool."""

    unattributed: tuple[Unattributed, ...] = ()
    claimed: tuple[ClaimedPods, ...] = ()
    """Pods asking for devices through DRA claims, which no prewarm serves."""
    notice: tuple[SourceStatus, ...] = ()
    """How each notice source fared (installed, items, problem)."""
    skipped: tuple[Skipped, ...] = ()
    """Pods and notice objects passed over this time (each costs itself only)."""


def quantile_label(quantile: float) -> str:
    """``P95`` for 0.95, ``P99.5`` for 0.995: the one way a quantile is named to people."""
    return f"P{round(quantile * 100, 6):g}"
