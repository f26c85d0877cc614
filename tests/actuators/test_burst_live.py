"""The burst rule running live (``pools[].policy: burst``): the training job publishes the rule
in the arrivals model's place, and the daemon on the API double prewarms floor + alpha x the
GPUs of pods created in the last 15 minutes - in whole nodes, under the pool's and the shared
caps, through the same planner, ledger and expiry as the quantile forecast.

A quiet pool (flat demand: floor 0) holds nothing; 24 GPUs of pods created now ask 24 more
(alpha 1), and the pool's cap of 16 GPUs holds the placeholders to two 8-GPU nodes; with
alpha 0.5, 12 GPUs - two nodes as well (whole nodes, rounded up), never more than the cap.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build
from forecaster.core.quality import regularize
from forecaster.core.series import DemandSeries
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.forecasting.burst import BurstRule
from forecaster.forecasting.registry import build as build_model
from forecaster.forecasting.training import rise_model, train_pool
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.settings import Settings
from forecaster.testing.fakes import POOL, T0, LiveSource
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import placeholders

HISTORY = [4.0] * (5 * 1440 + 1)  # five flat days before T0: the floor is 0


def settings(tmp_path: Path, *, alpha: float) -> Settings:
    return Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "notice": {"sources": []},
            "forecast": {
                "models": ["persistence"],
                "min_history_days": 1,
                "backtest": {"train_days": 2, "test_days": 1},
            },
            "planning": {"actuation": "placeholders", "budgets": {"max_total_prewarm_gpus": 64}},
            "pools": [
                {
                    "name": POOL,
                    "gpus_per_node": 8,
                    "max_prewarm_gpus": 16,
                    "policy": "burst",
                    "burst_alpha": alpha,
                }
            ],
        }
    )


def history() -> DemandSeries:
    return DemandSeries(T0 - 5 * 86400, 60, HISTORY, name=POOL)


def publish_rule(config: Settings) -> BurstRule:
    """What the training job publishes for a burst pool: the level model, and the rule in the
    arrivals model's place."""
    plan = build.training_plan(config, config.pool(POOL))
    rule, note = rise_model(history(), None, plan)
    assert isinstance(rule, BurstRule) and note.startswith("burst rule (floor 0.0 GPUs")
    level = build_model(
        "persistence", horizons_seconds=plan.horizons_seconds, quantiles=plan.quantiles
    )
    ArtifactStore(config.models_dir).publish(
        pool=POOL,
        model_name="persistence",
        model=level.fit(history()),
        metadata={},
        created="20270115T000000Z",
        arrivals=rule,
    )
    return rule


@pytest.fixture
def api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble() as server:
        server.clock = float(T0)
        yield server
    assert server.invalid == [], server.invalid


def placeholder_gpus(api: KubeApiDouble) -> int:
    requests = [
        j["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]  # type: ignore[index]
        for j in placeholders(api)
    ]
    return sum(int(r["nvidia.com/gpu"]) for r in requests)


@pytest.mark.parametrize(("alpha", "held"), [(1.0, 16), (0.5, 16), (0.25, 8)])
def test_the_burst_rule_prewarms_what_was_just_created_in_whole_nodes_under_the_cap(
    tmp_path: Path, api: KubeApiDouble, alpha: float, held: int
) -> None:
    config = settings(tmp_path, alpha=alpha)
    publish_rule(config)
    sim = ClusterSim(api)
    api.clock = float(T0 - 3600)
    sim.busy_pool(POOL, limit_gpus=400)  # its two jobs started an hour ago: not a burst now
    api.clock = float(T0)
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    source = LiveSource(T0 - 5 * 86400, HISTORY)
    reconciler = build.build_reconciler(config, source=source, kube=kube)
    daemon = Daemon(reconciler=reconciler, pools=(POOL,))
    quiet = daemon.reconcile(T0)
    assert quiet is not None and quiet.plan.pool(POOL).target_gpus == 0  # floor 0, none created
    api.clock = float(T0 + 30)
    for i in range(3):
        sim.submit(f"train-{i}", POOL, 8)  # 24 GPUs created now
    burst = daemon.reconcile(T0 + 30)
    assert burst is not None
    plan = burst.plan.pool(POOL)
    assert plan.target_gpus == held  # alpha x 24 in whole 8-GPU nodes, at most the cap of 16
    assert any("burst rule" in r for r in plan.reasons)
    assert placeholder_gpus(api) == held
    shown = TestClient(create_app(daemon)).get("/api/v1/status").json()["pools"][POOL]
    assert shown["plan_demand"]["model"] == "burst"
    assert "burst rule" in shown["plan_demand"]["basis"]


def test_the_training_job_publishes_the_rule_for_a_burst_pool(tmp_path: Path) -> None:
    config = settings(tmp_path, alpha=2.0)
    plan = build.training_plan(config, config.pool(POOL))
    assert plan.burst_alpha == 2.0
    store = ArtifactStore(config.models_dir)
    report = regularize(history().timestamps, history().values, step_seconds=60, name=POOL)[1]
    trained = train_pool(history(), report, plan=plan, store=store, created="20270115T000000Z")
    assert "burst rule (floor 0.0 GPUs" in trained.message
    artifact = store.load_current(POOL)
    assert artifact is not None and isinstance(artifact.arrivals, BurstRule)
    assert artifact.arrivals.alpha == 2.0
    predictive = config.pool(POOL).model_copy(update={"policy": "predictive"})
    assert build.training_plan(config, predictive).burst_alpha is None
