"""Persist the daemon's state in a ConfigMap of its own namespace (key ``state.json``)."""

from __future__ import annotations

import json
from typing import Any

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import ConflictError, Kube
from forecaster.actuators.manifests import config_map
from forecaster.errors import ActuationError

KEY = "state.json"


class ConfigMapStateStore:
    """A ``StateStore`` over one ConfigMap; writes are optimistic (resourceVersion)."""

    def __init__(self, kube: Kube, *, namespace: str, name: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self._version: str | None = None

    def load(self) -> dict[str, Any] | None:
        """The saved state, or None."""
        config_map = self.kube.get_config_map(self.namespace, self.name)
        if config_map is None:
            self._version = None
            return None
        self._version = config_map["metadata"]["resourceVersion"]
        text = (config_map.get("data") or {}).get(KEY)
        if not text:
            return None
        try:
            return dict(json.loads(text))
        except ValueError as exc:
            raise ActuationError(
                f"ConfigMap {self.namespace}/{self.name}: state is not JSON"
            ) from exc

    def save(self, data: dict[str, Any]) -> None:
        """Write ``data``; a concurrent writer (another leader) makes this fail with 409."""
        body = config_map(
            name=self.name,
            namespace=self.namespace,
            labels={lbl.MANAGED_BY: lbl.MANAGER},
            data={KEY: json.dumps(data, sort_keys=True, separators=(",", ":"))},
        )
        if self._version is None:
            try:
                self.kube.create_config_map(self.namespace, body)
            except ConflictError:
                self.load()
                raise
        else:
            body["metadata"]["resourceVersion"] = self._version
            self.kube.replace_config_map(self.namespace, body)
        self.load()  # remember the new resourceVersion
