"""Models shared through ConfigMaps (``models_store: configmap``): install the published
champions into ``models_dir`` (every replica, before each tick) and publish what training made
current (the CronJob)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from forecaster.actuators.coordination.model_configmaps import ModelConfigMaps
from forecaster.errors import ForecasterError
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.settings import Settings

log = logging.getLogger(__name__)


def model_store(settings: Settings) -> ArtifactStore:
    """The local model artifacts (``models list`` / ``rollback``, the daemon's models, what
    training writes and the ConfigMap mirror installs into or publishes from)."""
    return ArtifactStore(settings.models_dir)


def fetch_models(settings: Settings, mirror: ModelConfigMaps) -> list[str]:
    """Install every pool's published model into ``models_dir`` when it is new; what changed.

    A pool whose published model cannot be read or verified keeps its current one (logged).
    """
    store = model_store(settings)
    changed = []
    for pool in settings.pools:
        try:
            found = mirror.fetch(pool.name)
            if found is None or found[0] == store.current_version(pool.name):
                continue
            store.install(pool.name, found[0], text=found[1])
        except ForecasterError as exc:
            log.error(
                "pool %s: published model not installed, keeping the current: %s", pool.name, exc
            )
            continue
        changed.append(f"{pool.name} {found[0]}")
    return changed


def publish_models(settings: Settings, mirror: ModelConfigMaps, *, pools: Sequence[str]) -> None:
    """Publish the current local model of each pool in ``pools``."""
    store = model_store(settings)
    for name in pools:
        version = store.current_version(name)
        if version is not None and mirror.publish(
            name, version=version, text=store.read_text(name, version)
        ):
            log.info("pool %s: model %s published to its ConfigMap", name, version)
