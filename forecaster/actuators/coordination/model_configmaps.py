"""Model artifacts mirrored in ConfigMaps, for clusters without a ReadWriteMany volume.

Each pool's CURRENT artifact lives in the ConfigMap ``forecaster-model-<pool>`` of our namespace
(keys ``version`` and ``artifact.json``). The training CronJob fetches the champions, trains
into a scratch directory and publishes what became current; every daemon replica fetches into
its own scratch directory before each tick, so the usual hot reload applies (``app.model_sharing``
moves artifacts between this and the local ``ArtifactStore``, which verifies hash and pool on
the way in: a damaged one is refused and the current model stays).
Artifacts are small (4-60 KB); one above ``MAX_ARTIFACT_BYTES`` is refused with a clear error
(a ConfigMap holds at most 1 MiB).
"""

from __future__ import annotations

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import Kube
from forecaster.actuators.manifests import config_map
from forecaster.errors import ActuationError

MAX_ARTIFACT_BYTES = 900_000
ARTIFACT_KEY = "artifact.json"


def config_map_name(pool: str) -> str:
    """Where ``pool``'s current model is kept."""
    return f"forecaster-model-{pool}"


class ModelConfigMaps:
    """Publishes and fetches the current model artifact (as text) of each pool."""

    def __init__(self, kube: Kube, *, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace

    def publish(self, pool: str, *, version: str, text: str) -> bool:
        """Make ``version`` the published model of ``pool``; True if the ConfigMap changed."""
        if len(text.encode()) > MAX_ARTIFACT_BYTES:
            raise ActuationError(
                f"pool {pool}: model {version} is {len(text.encode())} bytes, more than a"
                f" ConfigMap can hold ({MAX_ARTIFACT_BYTES}); use models_store: directory"
            )
        name = config_map_name(pool)
        current = self.kube.get_config_map(self.namespace, name)
        if current is not None and (current.get("data") or {}).get("version") == version:
            return False
        body = config_map(
            name=name,
            namespace=self.namespace,
            labels={lbl.MANAGED_BY: lbl.MANAGER, lbl.POOL: pool},
            data={"version": version, ARTIFACT_KEY: text},
        )
        self.kube.put_config_map(self.namespace, body, current=current)
        return True

    def fetch(self, pool: str) -> tuple[str, str] | None:
        """``(version, artifact text)`` published for ``pool``, or None."""
        found = self.kube.get_config_map(self.namespace, config_map_name(pool))
        data = (found or {}).get("data") or {}
        if not data.get("version"):
            return None
        return str(data["version"]), str(data.get(ARTIFACT_KEY, ""))
