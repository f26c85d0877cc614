"""Champion/challenger promotion and rollback of published models.

Cases: the first model is promoted; a fresher fit of the same family is promoted; a challenger
of another family is promoted only if its pinball loss in the same backtest is lower, else the
champion stays current (the challenger is still stored); an unusable champion is replaced;
``forecaster models rollback`` goes back one version, or to a named one; trained with the
pool's arrivals, the arrivals model is published with the model and loaded with it; with a
GPU-hours budget the job replays the history to choose the operating point, publishes it with a
model fitted for every quantile it may choose, and the daemon built from the same config plans
at it under its cap; the choice replays the pool's pods where the source keeps them
(Prometheus: kube-state-metrics), the demand level otherwise or when they cannot be read.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from forecaster.app import training
from forecaster.app.build import build_reconciler, pool_policy
from forecaster.cli import main
from forecaster.core.jobs import JobTrace
from forecaster.core.operating_point import OperatingPoint
from forecaster.core.quality import regularize
from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.errors import SourceError
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.forecasting.backtest import ModelScore
from forecaster.forecasting.registry import build
from forecaster.forecasting.selection import champion_or_challenger
from forecaster.forecasting.training import TrainingPlan, train_pool
from forecaster.reconcile.models import ModelProvider
from forecaster.service.clock import FakeClock
from forecaster.settings import load_settings
from forecaster.simulation.replay import ReplaySetup
from forecaster.sources.files import CsvSource
from forecaster.sources.prometheus import PrometheusSource
from forecaster.testing.fakes import settings
from tests.conftest import KSM_START
from tests.factories import bursty


def score(model: str, pinball: float) -> ModelScore:
    return ModelScore(model, 0.95, pinball, 10.0, 0.1, 100, 0)


@pytest.fixture
def store(tmp_path: Path, helios: DemandSeries) -> ArtifactStore:
    return ArtifactStore(tmp_path / "models")


def publish(store: ArtifactStore, helios: DemandSeries, name: str, created: str) -> str:
    start = helios.start + 12 * DAY
    model = build(name, horizons_seconds=(900,), quantiles=(0.5, 0.95)).fit(
        helios.window(start, start + 3 * DAY)
    )
    return store.publish(pool="earth", model_name=name, model=model, metadata={}, created=created)


def test_promotion_rules(store: ArtifactStore, helios: DemandSeries) -> None:
    assert champion_or_challenger(store, "earth", challenger="gbm", scores=[]) == (
        True,
        "promoted: first model of the pool",
    )
    publish(store, helios, "persistence", "20260101T000000Z")
    promote, why = champion_or_challenger(store, "earth", challenger="persistence", scores=[])
    assert promote and "fresher fit" in why
    promote, why = champion_or_challenger(
        store,
        "earth",
        challenger="quantreg",
        scores=[score("persistence", 2.0), score("quantreg", 1.9)],
    )
    assert promote and "pinball 1.900 < 2.000" in why
    promote, why = champion_or_challenger(
        store,
        "earth",
        challenger="quantreg",
        scores=[score("persistence", 2.0), score("quantreg", 2.1)],
    )
    assert not promote and "champion persistence" in why and "stays current" in why
    (store.root / "earth" / (store.current_version("earth") + ".json")).write_text("{")  # type: ignore[operator]
    promote, why = champion_or_challenger(store, "earth", challenger="quantreg", scores=[])
    assert promote and "unusable" in why


def test_rollback_command(
    store: ArtifactStore, helios: DemandSeries, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = publish(store, helios, "persistence", "20260101T000000Z")
    second = publish(store, helios, "quantreg-raw", "20260108T000000Z")
    assert store.current_version("earth") == second
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "source": {"kind": "prometheus"},
                "models_dir": str(store.root),
                "pools": [{"name": "earth"}],
            }
        )
    )
    assert main(["models", "rollback", "--config", str(config), "--pool", "earth"]) == 0
    assert store.current_version("earth") == first
    assert f"current model is now {first} (was {second})" in capsys.readouterr().out
    assert (
        main(["models", "rollback", "--config", str(config), "--pool", "earth", "--to", second])
        == 0
    )
    assert store.current_version("earth") == second
    assert (
        main(["models", "rollback", "--config", str(config), "--pool", "earth", "--to", "bogus"])
        == 1
    )


def test_training_with_arrivals_publishes_the_arrivals_model_and_says_so(
    store: ArtifactStore,
) -> None:
    demand, arrivals = bursty(10, seed=5)
    plan = TrainingPlan(
        models=("persistence",),
        horizons_seconds=(600,),
        quantiles=(0.5, 0.95),
        selection_horizon_seconds=600,
        target_quantile=0.95,
        coverage_tolerance=0.05,
        min_history_seconds=3 * DAY,
        test_seconds=DAY,
        train_seconds=3 * DAY,
        origin_every_seconds=3600,
        refit_every_seconds=DAY,
    )
    report = regularize(demand.timestamps, demand.values, step_seconds=60, name="a")[1]
    trained = train_pool(
        demand, report, plan=plan, store=store, created="20260101T000000Z", arrivals=arrivals
    )
    assert "arrivals model fitted on" in trained.message
    artifact = store.load_current("a")
    assert artifact is not None and artifact.arrivals is not None
    provided = ModelProvider(store, horizons_seconds=(600,), quantiles=(0.5, 0.95))
    active = provided.get("a", history=demand)
    assert active is not None and active.arrivals is not None
    without = train_pool(demand, report, plan=plan, store=store, created="20260102T000000Z")
    assert "no arrivals history" in without.message
    assert store.load("a", without.version or "").arrivals is None


def test_with_a_budget_the_training_job_chooses_the_operating_point_the_daemon_plans_at(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    demand, _ = bursty(4, seed=6)
    csv = tmp_path / "a.csv"
    stamps = np.datetime_as_string(demand.timestamps.astype("datetime64[s]"), unit="s")
    csv.write_text(
        "timestamp,gpus_requested\n"
        + "".join(f"{t}Z,{v:g}\n" for t, v in zip(stamps, demand.values, strict=True))
    )
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "source": {"kind": "csv"},
                "models_dir": str(tmp_path / "models"),
                "forecast": {
                    "history_days": 4,
                    "min_history_days": 2,
                    "models": ["persistence"],
                    "backtest": {"test_days": 1, "train_days": 1, "origin_every_seconds": 3600},
                },
                "operating_point": {
                    "budget_dollars_per_day": 200,  # at the pool's price
                    "quantiles": [0.8, 0.9],
                    "floor_nodes": [0, 1],  # in the pool's nodes: floors of 0 and 8 GPUs
                    "measure_days": 1.5,
                    "demand_pod_gpus": 2,  # no pods: the level replays as 2-GPU pods
                },
                "twin": {"pool": "a"},
                "pools": [{"name": "a", "csv": str(csv), "max_prewarm_gpus": 32}],
            }
        )
    )
    replayed_with_arrivals: list[bool] = []
    choose = training.choose_operating_point

    def spy(history: DemandSeries, setup: ReplaySetup, **kwargs: Any) -> OperatingPoint | None:
        replayed_with_arrivals.append(setup.arrivals)
        assert kwargs["pods"] is None and kwargs["demand_pod_gpus"] == 2
        return choose(history, setup, **kwargs)

    monkeypatch.setattr(training, "choose_operating_point", spy)
    with caplog.at_level(logging.INFO):
        assert main(["train", "--config", str(config)]) == 0
    assert replayed_with_arrivals == [False]  # a CSV of demand has no pods' creation times:
    # the daemon gets no arrivals model, so the replays that choose for it have none either
    settings = load_settings(config)
    artifact = ArtifactStore(tmp_path / "models").load_current("a")
    assert artifact is not None and artifact.operating_point is not None
    point = artifact.operating_point
    tried = [(c.quantile, c.floor_gpus) for c in point.candidates]
    assert {(0.8, 0), (0.9, 0)} <= set(tried) <= {(0.8, 0), (0.8, 8), (0.9, 0), (0.9, 8)}
    price = pool_policy(settings, settings.pool("a")).price_per_gpu_hour
    assert point.window[1] == demand.end + 60 and point.budget == "$200/day"
    assert point.gpu_hours_per_day_budget == pytest.approx(200 / price)
    assert set(artifact.model.quantiles) == {0.5, 0.8, 0.9, 0.95}  # every quantile it may pick
    assert any("operating point P" in m for m in caplog.messages)
    assert f"operating point P{point.quantile * 100:g}" in capsys.readouterr().out  # the report
    loop = build_reconciler(settings, what_if=True)
    record = loop.tick(demand.end)
    assert record.pools["a"].quantile == point.quantile
    assert loop.policy_for(loop.pools[0]).floor_gpus == point.floor_gpus
    assert record.pools["a"].operating_point == point
    assert loop.effective_budgets().max_prewarm_gpu_hours_per_day == pytest.approx(
        point.gpu_hours_per_day_budget
    )


class _PodsFrom:
    """A source whose pod history is ``pods`` (or fails with ``error``)."""

    def __init__(self, pods: JobTrace | None = None, error: str | None = None) -> None:
        self.pods, self.error = pods, error

    def fetch(self, pool: str, *, start: int, end: int, step_seconds: int) -> Any:
        raise AssertionError("choose_point does not read demand")

    def fetch_pods(self, pool: str, *, start: int, end: int, step_seconds: int) -> JobTrace:
        if self.error:
            raise SourceError(self.error)
        assert self.pods is not None
        return self.pods


def test_the_operating_point_replays_the_pools_pods_where_the_source_keeps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    config = settings(tmp_path, operating_point={"budget_percent": 5})
    pool = config.pools[0]
    history, _ = bursty(3, seed=2)
    pods = JobTrace(
        submit=np.array([float(history.start)]), duration=np.array([600.0]), gpus=np.array([8])
    )
    handed: list[JobTrace | None] = []
    floors: list[list[int]] = []

    def spy(history: DemandSeries, setup: ReplaySetup, **kwargs: Any) -> None:
        handed.append(kwargs["pods"])
        floors.append(kwargs["floors_gpus"])

    monkeypatch.setattr(training, "choose_operating_point", spy)
    training.choose_point(config, pool, history, source=_PodsFrom(pods))
    with caplog.at_level(logging.WARNING):
        training.choose_point(config, pool, history, source=_PodsFrom(error="query timed out"))
    training.choose_point(config, pool, history, source=_PodsFrom(pods.seen_between(0, 0)))  # none
    training.choose_point(config, pool, history, source=CsvSource({}, value_column="v"))
    assert handed == [pods, None, None, None]  # without pods: the demand level, rebuilt
    # floors of 0, 2, 4, 6 nodes of 8 GPUs; 48 is beyond max_prewarm_gpus (32), which the
    # planner would cap it to: the same replay as 32, not tried twice
    assert floors[0] == [0, 16, 32]
    assert any("no pod history (query timed out)" in m for m in caplog.messages)


def test_pods_come_from_prometheus_over_the_pools_history(prometheus_url: str) -> None:
    source = PrometheusSource(url=prometheus_url, queries={})
    history, _ = source.fetch("gpu-a", start=KSM_START, end=KSM_START + 110 * 60, step_seconds=60)
    pods = training.fetch_pods(source, history)
    assert pods is not None
    assert sorted(pods.gpus.tolist()) == [2, 2, 4, 8]  # kube-state-metrics' four gpu-a pods


def test_a_time_budget_starts_no_pool_it_cannot_finish_and_the_stalest_go_first(
    tmp_path: Path, helios: DemandSeries, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pools are trained oldest model first; once the time spent plus the longest pool so far
    would pass the budget, the rest are skipped, keep their models and say why."""
    config = settings(
        tmp_path,
        source={"kind": "csv"},
        pools=[{"name": name, "csv": str(tmp_path / f"{name}.csv")} for name in "abc"],
    )
    store = ArtifactStore(config.models_dir)
    for pool, created in (("a", "20260108T000000Z"), ("b", "20260101T000000Z")):
        start = helios.start + 12 * DAY
        model = build("persistence", horizons_seconds=(900,), quantiles=(0.5, 0.95))
        store.publish(
            pool=pool,
            model_name="persistence",
            model=model.fit(helios.window(start, start + DAY)),
            metadata={},
            created=created,
        )
    a_version = store.current_version("a")
    now = [0.0]
    started: list[str] = []

    def fifty_seconds_each(*args: Any, **_: object) -> training.PoolTraining:
        pool = args[3]
        started.append(pool.name)
        now[0] += 50
        return training.PoolTraining(pool=pool.name, status="trained", message="", quality=None)

    monkeypatch.setattr(training, "_train_pool", fifty_seconds_each)
    results = training.train(
        config,
        pools=None,
        clock=FakeClock(datetime(2026, 1, 15, tzinfo=UTC)),
        time_budget_seconds=120,
        monotonic=lambda: now[0],
    )
    assert started == ["c", "b"]  # no model yet, then the older model; 100 s + 50 s > 120 s
    assert [(r.pool, r.status) for r in results] == [
        ("c", "trained"),
        ("b", "trained"),
        ("a", "skipped"),
    ]
    assert f"keeps its current model ({a_version})" in results[2].message
    assert store.current_version("a") == a_version
