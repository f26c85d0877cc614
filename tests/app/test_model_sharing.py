"""Models shared through ConfigMaps (``models_store: configmap``), on the API double.

Cases: a trained model published by one store is installed, verified and made current in
another (a replica's scratch copy) and the daemon hot-reloads it on its next tick; publishing
the same version again writes nothing; a tampered artifact in the ConfigMap is refused and the
replica keeps its current model; an artifact too large for a ConfigMap is refused with a clear
error; ``forecaster train`` fetches the champion first and publishes what became current, each
pool as soon as it is trained (a Job killed mid-way keeps the pools it finished).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from forecaster.actuators.coordination.model_configmaps import ModelConfigMaps
from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build, model_sharing, training
from forecaster.app.build import build_cluster_service
from forecaster.errors import ActuationError
from forecaster.forecasting import registry
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.forecasting.training import PoolTraining
from forecaster.service.clock import FakeClock
from forecaster.settings import Settings
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history, settings
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble

NS = "forecaster"


@pytest.fixture
def kube(api: KubeApiDouble) -> Kube:
    return Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)


def publish_a_model(store: ArtifactStore, created: str = "20260101T000000Z") -> str:
    model = registry.build("persistence", horizons_seconds=(300, 900, 1800), quantiles=(0.5, 0.95))
    history, _ = LiveSource(T0 - 2 * 86400, calm_history()).fetch(
        POOL, start=T0 - 86400, end=T0, step_seconds=60
    )
    return store.publish(
        pool=POOL, model_name="persistence", model=model.fit(history), metadata={}, created=created
    )


def shared(tmp_path: Path, name: str) -> Settings:
    return settings(tmp_path).model_copy(
        update={"models_store": "configmap", "models_dir": tmp_path / name}
    )


def test_a_published_model_reaches_every_replica(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim, kube: Kube
) -> None:
    trainer = shared(tmp_path, "cronjob")
    version = publish_a_model(ArtifactStore(trainer.models_dir))
    mirror = build.model_mirror(trainer, kube)
    assert mirror is not None
    model_sharing.publish_models(trainer, mirror, pools=[POOL])
    before = len(api.writes())
    model_sharing.publish_models(trainer, mirror, pools=[POOL])
    assert len(api.writes()) == before  # same version: nothing written
    replica = build_cluster_service(
        shared(tmp_path, "replica"),
        kube,
        identity="replica-a",
        clock=FakeClock(datetime.fromtimestamp(T0, tz=UTC)),
    )
    replica.daemon.reconciler.source = LiveSource(T0 - 2 * 86400, calm_history())
    replica.renew()
    replica.reconcile()
    record = replica.daemon.last
    assert record is not None
    assert record.pools[POOL].model_version == version  # installed, verified, hot-reloaded
    assert ArtifactStore(tmp_path / "replica").current_version(POOL) == version


def test_a_tampered_published_model_is_refused(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim, kube: Kube
) -> None:
    replica = ArtifactStore(tmp_path / "replica")
    good = publish_a_model(replica)
    trainer = ArtifactStore(tmp_path / "cronjob")
    newer = publish_a_model(trainer, created="20260108T000000Z")
    text = trainer.read_text(POOL, newer).replace('"persistence"', '"persistence-tampered"', 1)
    ModelConfigMaps(kube, namespace=NS).publish(POOL, version=newer, text=text)
    assert (
        model_sharing.fetch_models(shared(tmp_path, "replica"), ModelConfigMaps(kube, namespace=NS))
        == []
    )
    assert replica.current_version(POOL) == good
    assert newer not in replica.versions(POOL)


def test_an_artifact_too_large_for_a_configmap_is_refused(api: KubeApiDouble, kube: Kube) -> None:
    with pytest.raises(ActuationError, match="more than a ConfigMap can hold"):
        ModelConfigMaps(kube, namespace=NS).publish(
            POOL, version="20260101T000000Z-00000000", text="x" * 1_000_000
        )
    assert api.writes() == []


def test_training_fetches_the_champion_and_publishes_the_result(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim, kube: Kube
) -> None:
    earlier = ArtifactStore(tmp_path / "earlier-run")
    champion = publish_a_model(earlier)
    ModelConfigMaps(kube, namespace=NS).publish(
        POOL, version=champion, text=earlier.read_text(POOL, champion)
    )
    config = shared(tmp_path, "cronjob")
    mirror = build.model_mirror(config, kube)
    results = training.train(
        config, pools=None, clock=FakeClock(datetime.fromtimestamp(T0, tz=UTC)), mirror=mirror
    )
    assert champion in ArtifactStore(config.models_dir).versions(POOL)  # fetched before training
    published = ModelConfigMaps(kube, namespace=NS).fetch(POOL)
    assert published is not None
    assert published[0] == ArtifactStore(config.models_dir).current_version(POOL)
    assert [r.pool for r in results] == [POOL]


def test_each_pool_is_published_as_soon_as_it_is_trained(
    tmp_path: Path, api: KubeApiDouble, kube: Kube, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A training Job killed at its deadline (here: interrupted while training the second pool)
    keeps the model of the pool it finished in the ConfigMap."""
    config = shared(tmp_path, "cronjob")
    first = config.pools[0]
    config = config.model_copy(
        update={"pools": (first, first.model_copy(update={"name": "second"}))}
    )
    trained: list[str] = []

    def fake_train_pool(settings: Settings, *_: object, **__: object) -> PoolTraining:
        if trained:
            raise KeyboardInterrupt  # the deadline's SIGKILL, as near as a test gets
        trained.append(publish_a_model(ArtifactStore(settings.models_dir)))
        return PoolTraining(pool=POOL, status="trained", message="", quality=None)

    monkeypatch.setattr(training, "_train_pool", fake_train_pool)
    with pytest.raises(KeyboardInterrupt):
        training.train(
            config,
            pools=None,
            clock=FakeClock(datetime.fromtimestamp(T0, tz=UTC)),
            mirror=build.model_mirror(config, kube),
        )
    published = ModelConfigMaps(kube, namespace=NS).fetch(POOL)
    assert published is not None and published[0] == trained[0]
