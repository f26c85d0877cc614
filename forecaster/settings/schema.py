"""The config's schema: every setting, its type, bounds, default and description (pydantic).

``forecaster.settings.loading`` reads a file into it; ``scripts/config_reference.py`` documents
it. A bad config refuses to load with a ``ConfigError`` naming each bad field by its path, in our
words, e.g. ``pools.0.gpus_per_node: must be > 0, got 0``; an unknown key names the nearest
valid one. Relative paths in the file are relative to the file itself, so the bundled config
works from any working directory.

Only ``app`` and ``cli`` read settings; they hand plain values to everything else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from forecaster.accelerators import GPU, check_resource
from forecaster.core.error_budget import SloPolicy, following_the_plan
from forecaster.core.operating_point import CANDIDATE_FLOOR_NODES, CANDIDATE_QUANTILES, Budget
from forecaster.errors import ConfigError
from forecaster.registry import AUTO_BACKEND, BACKEND, NOTICE_SOURCE, check, known

NodePoolName = Annotated[
    str, Field(pattern=r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$", description="Karpenter NodePool")
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        """``true`` where a number belongs is a typo, not 1 (pydantic's lax mode would take it)."""
        if isinstance(value, bool) and info.field_name is not None:
            annotation = str(cls.model_fields[info.field_name].annotation)
            if "bool" not in annotation and ("int" in annotation or "float" in annotation):
                raise ValueError(f"expected a number, got {str(value).lower()}")
        return value


DAY_SECONDS = 86400
CAP_CEILING_GPUS = 10_000
"""No pool or cluster prewarms more GPUs than this: a larger cap is a typo (an extra zero)."""
KUBERNETES_NAME_LIMIT = 63
"""Job names (they become the pods' ``job-name`` label value) and label values."""


def longest_object_name(pool: str, max_prewarm_gpus: int) -> str:
    """The longest name forecaster gives an object of ``pool``: a placeholder Job
    ``forecaster-<pool>-<slot>-<epoch seconds>`` (``actuators.placeholders``)."""
    return f"forecaster-{pool}-{'9' * len(str(max(max_prewarm_gpus, 1)))}-{'9' * 10}"


class LeadTime(_Strict):
    """How long new GPU capacity takes to become usable; the forecast looks this far ahead."""

    provisioning_seconds: int = Field(60, ge=0, description="node launch to Ready (Karpenter)")
    image_pull_seconds: int = Field(300, ge=0, description="pulling the workload image")
    margin_seconds: int = Field(60, ge=0, description="safety margin")

    @property
    def total_seconds(self) -> int:
        """The lead time the planner must forecast: the sum of the parts."""
        return self.provisioning_seconds + self.image_pull_seconds + self.margin_seconds


class Prices(_Strict):
    """What a GPU-hour of this pool costs, by capacity type."""

    on_demand: float = Field(4.0, ge=0, allow_inf_nan=False)
    spot: float = Field(1.5, ge=0, allow_inf_nan=False)


class KueuePoolSettings(_Strict):
    """Kueue admits this pool's work: prewarm no more than its quota could still admit."""

    flavors: tuple[str, ...] = Field(
        (), description="ResourceFlavors of this pool; empty: those whose nodeLabels select it"
    )
    cluster_queues: tuple[str, ...] = Field(
        (), description="ClusterQueues to count; empty: all with GPU quota on those flavors"
    )


class PoolSettings(_Strict):
    """One Karpenter NodePool whose GPU demand we forecast (and may prewarm)."""

    name: NodePoolName
    resource: str = Field(
        GPU,
        description="the extended resource the pool's accelerators are scheduled by"
        " (nvidia.com/gpu, nvidia.com/mig-1g.10gb, amd.com/gpu, aws.amazon.com/neuron,"
        " aws.amazon.com/neuroncore ...): demand, prewarm, caps and prices of the pool are in"
        " its unit (every *_gpus field here counts it: for a MIG pool slices, not GPUs)",
    )
    gpus_per_node: int = Field(8, gt=0, le=128, description="units of resource per node")
    placeholder_gpus: int | None = Field(None, gt=0, description="default: a whole node")

    @field_validator("resource", mode="before")
    @classmethod
    def _one_resource(cls, resource: object) -> object:
        if isinstance(resource, list | tuple) and len(resource) > 1:
            raise ValueError(
                f"one accelerator resource per pool, got {list(resource)}: demand, caps and"
                " prices are counted in one unit (a MIG slice is not a GPU); split the NodePool"
                " into one per resource"
            )
        if isinstance(resource, list | tuple) and len(resource) == 1:
            resource = resource[0]
        return check_resource(resource) if isinstance(resource, str) else resource

    lead_time: LeadTime = LeadTime()
    csv: Path | None = Field(None, description="history file when source.kind is csv")
    query: str | None = Field(
        None,
        description="PromQL override; {pool} is the NodePool name, {resource} the pool's"
        " resource as kube-state-metrics labels it (nvidia_com_gpu)",
    )
    arrivals_query: str | None = Field(
        None,
        description="PromQL override of the GPUs of pods created per step (the arrivals model's"
        " history): {pool}, {step} and {twice_step} are filled in",
    )
    pods_query: str | None = Field(
        None,
        description="PromQL override of which pods belong to the pool, one series per"
        " (namespace, pod) seen within {window} (the pod history the operating point replays):"
        " {pool} and {window} are filled in",
    )
    forecast_only: bool = Field(False, description="forecast and report, never act")
    max_prewarm_gpus: int = Field(32, ge=0, le=CAP_CEILING_GPUS)
    floor_gpus: int = Field(
        0,
        ge=0,
        description="prewarm at least this many GPUs whatever the forecast says (a warm floor"
        " for the steady trickle of small jobs), while the pool has a forecast; an operating"
        " point's choice replaces it",
    )
    policy: Literal["predictive", "burst"] = Field(
        "predictive",
        description="what the plan follows: predictive (the arrivals model's quantile of the"
        " peak rise) or burst (a floor learned weekly + burst_alpha x GPUs of pods created in"
        " the last 15 min; replay's burst-live:ALPHA runs it as a pool would);"
        " same caps, ledger, error budget and expiry either way",
    )
    burst_alpha: float = Field(
        1.0, ge=0, le=16, description="policy burst: share of the last 15 min's GPUs prewarmed"
    )
    prices: Prices = Prices()
    capacity_type: Literal["on-demand", "spot"] = "on-demand"
    backend: str | None = Field(
        None,
        description="this pool's own prewarm backend (placeholders, capacitybuffer or another"
        " registered one); default: planning.actuation",
    )

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, backend: str | None) -> str | None:
        return None if backend is None else check(BACKEND, backend)

    allow_unlimited_nodepool: bool = Field(
        False, description="act even if the NodePool has no limit on the pool's resource"
    )
    kueue: KueuePoolSettings | None = Field(
        None, description="Kueue gates this pool: cap prewarm at what its quota could admit"
    )
    warm_image: str | None = Field(None, description="run this image (pre-pulls it) not pause")
    warm_command: tuple[str, ...] = ("sleep", "infinity")

    @model_validator(mode="after")
    def _placeholder_fits(self) -> PoolSettings:
        if self.placeholder_gpus is not None and self.placeholder_gpus > self.gpus_per_node:
            raise ValueError("placeholder_gpus cannot exceed gpus_per_node")
        longest = longest_object_name(self.name, self.max_prewarm_gpus)
        if len(longest) > KUBERNETES_NAME_LIMIT:
            room = KUBERNETES_NAME_LIMIT - (len(longest) - len(self.name))
            raise ValueError(
                f"name {self.name!r} is too long: its placeholder Jobs would be named like"
                f" {longest} ({len(longest)} characters, Kubernetes allows"
                f" {KUBERNETES_NAME_LIMIT}); use at most {room} characters"
            )
        return self

    @property
    def placeholder_size(self) -> int:
        """GPUs per placeholder (a whole node unless set)."""
        return self.placeholder_gpus or self.gpus_per_node

    @property
    def price_per_gpu_hour(self) -> float:
        """The price of the capacity type this pool runs on."""
        return self.prices.spot if self.capacity_type == "spot" else self.prices.on_demand


class BudgetSettings(_Strict):
    """Caps over all pools; the planner enforces each one itself."""

    max_total_prewarm_gpus: int = Field(64, ge=0, le=CAP_CEILING_GPUS)
    max_prewarm_gpu_hours_per_day: float = Field(
        200.0, ge=0, le=CAP_CEILING_GPUS * 24, allow_inf_nan=False
    )
    max_cost_per_hour: float = Field(200.0, ge=0, le=1_000_000, allow_inf_nan=False)


NAMESPACE_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"


class PlaceholderSettings(_Strict):
    """The pods (or CapacityBuffer chunks) that hold prewarmed capacity."""

    namespace: str = Field(
        "forecaster-placeholders",
        pattern=NAMESPACE_PATTERN,
        description="where placeholder Jobs, CapacityBuffers and their PodTemplates live: a"
        " namespace of their own, where no ServiceAccount of ours does (the daemon may create"
        " Jobs there, so it must not be able to run one as another of our accounts)",
    )
    priority_class: str = Field(
        "forecaster-placeholder",
        description="shipped in deploy/; must have -10 <= value < 0 and preemptionPolicy Never",
    )
    ttl_seconds: int = Field(
        3600,
        ge=300,
        le=DAY_SECONDS,
        description="placeholders (and buffers) expire this long after their last renewal, with"
        " or without the daemon: at most a day",
    )
    renew_before_seconds: int = Field(600, ge=60)
    image: str = "registry.k8s.io/pause:3.10"
    pull_recent_images: int = Field(
        2,
        ge=0,
        le=5,
        description="new placeholders pull the images the pool's pods of the last hour ran"
        " (at most this many, most GPUs first; only images their pods pulled without a secret):"
        " a warm node is then warm for the workload; 0 turns it off",
    )
    helper_image: str = Field(
        "docker.io/library/busybox:1.36.1-musl",
        description="gives the image pulls a static 'true' to run (any image, no shell needed);"
        " mirror it for an air-gapped cluster",
    )

    @model_validator(mode="after")
    def _renewal_fits(self) -> PlaceholderSettings:
        if self.renew_before_seconds >= self.ttl_seconds:
            raise ValueError("renew_before_seconds must be shorter than ttl_seconds")
        return self


class PlanningSettings(_Strict):
    """How forecasts become prewarm."""

    budgets: BudgetSettings = BudgetSettings()
    placeholders: PlaceholderSettings = PlaceholderSettings()
    stale_after_seconds: int = Field(300, gt=0, description="older data: no new prewarm")
    hold_seconds: int = Field(900, ge=0, description="then existing prewarm is held this long")
    actuation: str = Field(
        AUTO_BACKEND,
        description="auto: CapacityBuffers where an autoscaler serves them, else placeholder"
        " pods; or a registered backend's name (placeholders, capacitybuffer, ...)",
    )

    @field_validator("actuation")
    @classmethod
    def _known_actuation(cls, actuation: str) -> str:
        if actuation != AUTO_BACKEND and actuation not in known(BACKEND):
            choices = ", ".join((AUTO_BACKEND, *known(BACKEND)))
            raise ValueError(f"unknown actuation {actuation!r}; known: {choices}")
        return actuation

    protect_nodepools: bool = Field(
        False,
        description="opt-in: also pause consolidation NodePool-wide while prewarming",
    )
    protect_consolidate_after: str = Field(
        "30m",
        pattern=r"^([0-9]+(s|m|h))+$",
        description="consolidateAfter while paused: a duration (Never would outlive a fault)",
    )
    protect_seconds: int = Field(
        3600,
        ge=300,
        le=DAY_SECONDS,
        description="deadline of a NodePool pause (at most a day); cleanup --expired restores it",
    )


class NoticeNamespaces(_Strict):
    """Which namespaces' announced work is read (by name: a label selector would need a
    cluster-wide ``namespaces: list`` grant)."""

    include: tuple[str, ...] = Field(
        (), description="read only these namespaces' announced work; [] reads every namespace"
    )
    exclude: tuple[str, ...] = Field(
        (),
        description="never read these namespaces' announced work (their pods are then"
        " unannounced demand, learnt by the forecast)",
    )

    @model_validator(mode="after")
    def _apart(self) -> NoticeNamespaces:
        both = sorted(set(self.include) & set(self.exclude))
        if both:
            raise ValueError(f"namespace(s) {both} both included and excluded")
        return self


class NoticeSettings(_Strict):
    """GPU work the cluster announces before its pods exist (``actuators.notice``)."""

    sources: tuple[str, ...] = Field(
        ("cronjob", "jobset", "kueue", "kueue-pending", "argo", "cronworkflow", "volcano"),
        description="notice sources read every tick (RBAC: list their kinds); one not served"
        " by the cluster is shown as not installed; [] reads none",
    )
    namespace_share: float = Field(
        0.25,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="the share of planning.budgets.max_prewarm_gpu_hours_per_day one namespace's"
        " announced work may hold in a day; past it its items are not planned until the day"
        " rolls on, so one tenant's notice cannot spend the budget other pools' floors need",
    )
    namespace_gpu_share: float = Field(
        0.5,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="the share of each pool's max_prewarm_gpus, and of"
        " planning.budgets.max_total_prewarm_gpus over all pools, that one namespace's announced"
        " work due at once may claim (soonest first; the rest is not planned); 1 on a cluster"
        " whose pools each serve one team",
    )
    grace_seconds: int = Field(
        600,
        ge=0,
        le=DAY_SECONDS,
        description="announced work later than its latest start by this much did not come",
    )
    namespaces: NoticeNamespaces = Field(
        default_factory=NoticeNamespaces,
        description="whose announced work is read (by namespace name); every namespace's by"
        " default",
    )

    @field_validator("sources")
    @classmethod
    def _known(cls, sources: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(check(NOTICE_SOURCE, source) for source in sources)


class PrometheusSettings(_Strict):
    """Where and how to query Prometheus."""

    url: str = Field("http://prometheus-operated.monitoring.svc:9090", pattern=r"^https?://")
    timeout_seconds: float = Field(10.0, gt=0, le=300)
    retries: int = Field(3, ge=0, le=10)
    backoff_seconds: float = Field(0.5, ge=0, le=30)


class SourceSettings(_Strict):
    """Where demand history comes from."""

    kind: Literal["csv", "prometheus"] = "prometheus"
    csv_value_column: str = "gpus_requested"
    prometheus: PrometheusSettings = PrometheusSettings()


class BacktestSettings(_Strict):
    """Rolling-origin backtest used to select a model per pool."""

    test_days: float = Field(7, gt=0)
    train_days: float = Field(14, gt=0)
    origin_every_seconds: int = Field(300, gt=0)
    refit_every_seconds: int = Field(86400, gt=0)


class ForecastSettings(_Strict):
    """What to forecast and how models are chosen."""

    step_seconds: int = Field(60, gt=0, le=3600)
    horizons_seconds: tuple[int, ...] = (300, 900, 1800)
    quantiles: tuple[float, ...] = (0.5, 0.95)
    target_quantile: float = Field(0.95, gt=0.5, lt=1)
    coverage_tolerance: float = Field(0.01, gt=0, lt=0.5)
    models: tuple[str, ...] = (
        "persistence",
        "seasonal-naive",
        "prophet",
        "quantreg",
        "gbm",
        "ensemble",
        "prophet-raw",
        "quantreg-raw",
        "gbm-raw",
        "ensemble-raw",
    )
    history_days: float = Field(28, gt=0, description="history used to train")
    min_history_days: float = Field(14, gt=0, description="less usable history: forecast-only")
    outage_min_seconds: int = Field(3600, ge=0, description="runs of zeros this long: excluded")
    backtest: BacktestSettings = BacktestSettings()

    @model_validator(mode="after")
    def _consistent(self) -> ForecastSettings:
        from forecaster.forecasting.registry import known_names

        if not self.horizons_seconds or any(h <= 0 for h in self.horizons_seconds):
            raise ValueError("horizons_seconds must be a non-empty list of positive numbers")
        bad = [h for h in self.horizons_seconds if h % self.step_seconds]
        if bad:
            raise ValueError(f"horizons_seconds {bad} are not multiples of step_seconds")
        if any(not 0 < q < 1 for q in self.quantiles):
            raise ValueError("quantiles must lie strictly between 0 and 1")
        for needed in (0.5, self.target_quantile):
            if needed not in self.quantiles:
                raise ValueError(f"quantiles must include {needed}")
        unknown = [m for m in self.models if m not in known_names()]
        if unknown or not self.models:
            raise ValueError(f"unknown models {unknown}; known: {known_names()}")
        if self.min_history_days > self.history_days:
            raise ValueError("min_history_days cannot exceed history_days")
        return self


class OperatingPointSettings(_Strict):
    """Choose the forecast quantile for a budget at each retrain (off by default: no budget).

    The training job replays each pool's history (its pods, or its demand turned into pods)
    through the cluster twin at each quantile and keeps the one with the lowest mean wait within
    the budget, or the cheapest within a P95 wait target (``core.operating_point``). The pool
    then plans for it, the GPU-hours/day cap becomes the budget (a wait target keeps the
    configured cap) and the SLO follows the quantile."""

    budget_percent: float | None = Field(
        None, gt=0, le=100, description="GPU-hours over reactive scaling, e.g. 5 for +5 %"
    )
    budget_dollars_per_day: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="or prewarm dollars a day, per pool"
    )
    p95_wait_seconds: float | None = Field(
        None,
        gt=0,
        allow_inf_nan=False,
        description="or a wait target: the cheapest quantile whose replayed P95 wait is within"
        " it, under planning.budgets.max_prewarm_gpu_hours_per_day (that cap stays)",
    )
    quantiles: tuple[float, ...] = Field(CANDIDATE_QUANTILES, min_length=1)
    floor_nodes: tuple[int, ...] = Field(
        CANDIDATE_FLOOR_NODES,
        min_length=1,
        description="warm floors tried with each quantile, in the pool's nodes (each at most"
        " the pool's max_prewarm_gpus)",
    )
    measure_days: float = Field(
        14, gt=0, description="the last days of the history judged; the earlier ones train"
    )
    model: str = Field("quantreg-raw", description="level model the replays retrain weekly")
    demand_pod_gpus: int | None = Field(
        None,
        ge=1,
        description="without a pod history (a CSV source, no kube-state-metrics pods), the"
        " demand level is replayed as pods of this many GPUs (at most a node); default: whole"
        " nodes",
    )

    @model_validator(mode="after")
    def _consistent(self) -> OperatingPointSettings:
        from forecaster.forecasting.registry import known_names

        if any(not 0.5 < q < 1 for q in self.quantiles):
            raise ValueError("quantiles must lie between 0.5 and 1")
        if any(n < 0 for n in self.floor_nodes):
            raise ValueError("floor_nodes must be >= 0")
        given = self._targets_given
        if len(given) > 1:
            raise ValueError(
                f"give one of budget_percent, budget_dollars_per_day and"
                f" p95_wait_seconds, not {' and '.join(given)}"
            )
        if self.model not in known_names():
            raise ValueError(f"model: unknown {self.model!r}; known: {known_names()}")
        return self

    @property
    def _targets_given(self) -> list[str]:
        """Which of the budget and wait-target fields are set (at most one may be)."""
        names = ("budget_percent", "budget_dollars_per_day", "p95_wait_seconds")
        return [name for name in names if getattr(self, name) is not None]

    @property
    def enabled(self) -> bool:
        """Whether a budget or wait target is set (the training job then chooses, the daemon
        follows)."""
        return bool(self._targets_given)

    def budget(self, *, price_per_gpu_hour: float) -> Budget:
        """The budget for a pool at its price (only when ``enabled``)."""
        return Budget(
            percent=self.budget_percent,
            dollars_per_day=self.budget_dollars_per_day,
            price_per_gpu_hour=price_per_gpu_hour,
            p95_wait_s=self.p95_wait_seconds,
        )


class TwinSettings(_Strict):
    """The embedded default: the daemon runs against the cluster twin replaying a job trace."""

    jobs: Path = Path("../data/samples/msr-itp-cluster04-jobs.csv")
    epoch: str = Field("2026-01-08T00:00:00Z", description="trace second 0 (ISO 8601)")
    pool: NodePoolName = "itp"
    start_day: float = Field(0, ge=0)
    warmup_days: float = Field(14, ge=1, description="simulated at full speed, then trained on")
    end_day: float = Field(50, gt=0)
    speed: float = Field(3600, gt=0, le=100_000, description="simulated seconds per real second")
    models: tuple[str, ...] = ("persistence", "quantreg-raw", "quantreg")
    retrain_every_days: float = Field(7, gt=0)
    nodepool_limit_gpus: int = Field(4096, gt=0, description="the twin NodePool's GPU limit")

    @model_validator(mode="after")
    def _window(self) -> TwinSettings:
        if self.start_day + self.warmup_days >= self.end_day:
            raise ValueError("twin: start_day + warmup_days must be before end_day")
        return self


class Settings(_Strict):
    """The whole configuration file."""

    source: SourceSettings = SourceSettings()
    forecast: ForecastSettings = ForecastSettings()
    planning: PlanningSettings = PlanningSettings()
    notice: NoticeSettings = NoticeSettings()
    operating_point: OperatingPointSettings = OperatingPointSettings()
    slo: SloPolicy = SloPolicy()
    """The core value itself (validated by its own ``__post_init__``; unknown keys refused).
    ``target_exceedance`` and ``max_waste_gpu_hours_per_day`` left out follow the plan
    (``core.error_budget.following_the_plan``: 1 - target_quantile, the GPU-hours/day budget)."""
    models_dir: Path = Path("models")
    models_store: Literal["directory", "configmap"] = Field(
        "directory",
        description="configmap: models are shared through ConfigMaps (no ReadWriteMany volume);"
        " models_dir is then each pod's scratch copy",
    )
    dry_run: bool = Field(False, description="plan and report; send no write to the cluster")
    reconcile_every_seconds: int = Field(15, ge=5)
    watch_pods: bool = Field(
        True,
        description="watch the cluster's pods (RBAC verb watch): ticks read other pods from the"
        " watch's cache instead of listing them all, and a new pending GPU pod wakes a tick at"
        " once; false: list every tick, decide at the interval",
    )
    namespace: str = Field(
        "forecaster",
        pattern=NAMESPACE_PATTERN,
        description="forecaster's own namespace: its state, leader Lease, kill switch, models"
        " and Events, and the training, expiry and cleanup ServiceAccounts",
    )
    state_config_map: str = "forecaster-state"
    twin: TwinSettings = TwinSettings()
    pools: tuple[PoolSettings, ...] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _slo_follows_the_plan(cls, data: Any) -> Any:
        """Fill the SLO targets left out from the plan (see ``slo``); given ones are kept."""
        if not isinstance(data, dict) or not isinstance(data.get("slo", {}), dict):
            return data  # not a mapping: the field validators say what is wrong
        forecast, planning = data.get("forecast") or {}, data.get("planning") or {}
        try:
            quantile = float(
                forecast.get(
                    "target_quantile", ForecastSettings.model_fields["target_quantile"].default
                )
            )
            budget = float(
                (planning.get("budgets") or {}).get(
                    "max_prewarm_gpu_hours_per_day",
                    BudgetSettings.model_fields["max_prewarm_gpu_hours_per_day"].default,
                )
            )
            plan = following_the_plan(
                SloPolicy(), target_quantile=quantile, prewarm_gpu_hours_per_day=budget
            )
        except (TypeError, ValueError, AttributeError):
            return data  # a bad quantile or budget: its own field reports it
        slo = dict(data.get("slo") or {})
        slo.setdefault("target_exceedance", plan.target_exceedance)
        slo.setdefault("max_waste_gpu_hours_per_day", plan.max_waste_gpu_hours_per_day)
        return {**data, "slo": slo}

    @model_validator(mode="after")
    def _pools_consistent(self) -> Settings:
        names = [p.name for p in self.pools]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"pool names must be unique; repeated: {duplicated}")
        if self.planning.placeholders.namespace == self.namespace:
            raise ValueError(
                f"planning.placeholders.namespace is {self.namespace}, forecaster's own"
                " namespace: placeholders need one of their own (default"
                " forecaster-placeholders), where the daemon's Jobs cannot run as the training,"
                " expiry or cleanup accounts (docs/operations.md, upgrading)"
            )
        ttl = self.planning.placeholders.ttl_seconds
        if self.reconcile_every_seconds >= ttl / 2:
            raise ValueError(
                f"reconcile_every_seconds ({self.reconcile_every_seconds}) must be under half of"
                f" planning.placeholders.ttl_seconds ({ttl}): prewarm would lapse between ticks"
            )
        longest = max(self.forecast.horizons_seconds)
        for i, pool in enumerate(self.pools):
            if pool.lead_time.total_seconds > longest:
                raise ValueError(
                    f"pools.{i}.lead_time adds up to {pool.lead_time.total_seconds}s, beyond the"
                    f" longest forecast horizon ({longest}s): add a longer horizon"
                )
            if self.source.kind == "csv" and pool.csv is None:
                raise ValueError(f"pools.{i}.csv is required when source.kind is csv")
        warmup = self.forecast.history_days - self.operating_point.measure_days
        if self.operating_point.enabled and warmup < 1:
            raise ValueError(
                f"operating_point.measure_days ({self.operating_point.measure_days:g}) must leave"
                f" at least a day of forecast.history_days ({self.forecast.history_days:g}) to"
                " train the replays on"
            )
        misses = round(1.0 - self.forecast.target_quantile, 9)
        if self.slo.target_exceedance < misses:
            raise ValueError(
                f"slo.target_exceedance {self.slo.target_exceedance:g} is below the"
                f" {misses:g} of points a P{self.forecast.target_quantile * 100:g} plan"
                " exceeds by design: it would hand off all day; leave it out to follow"
                " forecast.target_quantile"
            )
        return self

    @property
    def model_quantiles(self) -> tuple[float, ...]:
        """What models are fitted for: ``forecast.quantiles`` and, with a budget, every
        quantile the operating point may choose."""
        chosen = self.operating_point.quantiles if self.operating_point.enabled else ()
        return tuple(sorted({*self.forecast.quantiles, *chosen}))

    def pool(self, name: str) -> PoolSettings:
        """The pool called ``name``."""
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise ConfigError(
            f"no pool named {name!r} in the config (have {[p.name for p in self.pools]})"
        )
