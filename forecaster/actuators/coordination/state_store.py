"""Persist the daemon's state in a ConfigMap of its own namespace (key ``state.json``).

A missing state is a fresh start only on a fresh install: when the leader Lease shows that a
leader ran before this process (``earlier_leader``), the state it kept (the GPU-hours spent
today, hand-offs in progress) was lost, and ``load`` raises instead of starting a fresh budget.
``forecaster resume --reset-state`` is the operator's explicit way out.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from forecaster.actuators import labels as lbl
from forecaster.actuators.events import warning
from forecaster.actuators.kube import ConflictError, Kube
from forecaster.actuators.manifests import ObjectReference, config_map
from forecaster.errors import ActuationError

log = logging.getLogger(__name__)
KEY = "state.json"


class ConfigMapStateStore:
    """A ``StateStore`` over one ConfigMap; writes are optimistic (resourceVersion)."""

    def __init__(
        self,
        kube: Kube,
        *,
        namespace: str,
        name: str,
        earlier_leader: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.earlier_leader = earlier_leader
        """Who led before this process, as the Lease first showed it (None: a fresh install)."""
        self._version: str | None = None
        self._refused: str | None = None  # the last refusal recorded as an Event

    def refused(self, message: str, *, now: int) -> None:
        """Record, once per distinct message, a Warning Event on the state ConfigMap saying why
        the state was not read (best effort: the tick's error and metric say it anyway)."""
        if message == self._refused:
            return
        involved: ObjectReference = {"apiVersion": "v1", "kind": "ConfigMap", "name": self.name}
        body = warning(
            self.namespace, involved, reason="StateRefused", message=message[:1000], now=now
        )
        try:
            self.kube.create_event(self.namespace, body)
            self._refused = message
        except ActuationError as exc:
            log.warning("could not record an Event on ConfigMap %s: %s", self.name, exc)

    def load(self) -> dict[str, Any] | None:
        """The saved state, or None on a fresh install (see the module docstring)."""
        config_map = self.kube.get_config_map(self.namespace, self.name)
        self._version = None if config_map is None else config_map["metadata"]["resourceVersion"]
        text = (config_map.get("data") or {}).get(KEY) if config_map is not None else None
        if not text:
            self._refuse_fresh_start("missing" if config_map is None else f"has no {KEY}")
            return None
        try:
            return dict(json.loads(text))
        except ValueError as exc:
            raise ActuationError(
                f"ConfigMap {self.namespace}/{self.name}: state is not JSON"
            ) from exc

    def _refuse_fresh_start(self, what: str) -> None:
        earlier = self.earlier_leader()
        if earlier is not None:
            raise ActuationError(
                f"ConfigMap {self.namespace}/{self.name} {what}, but the leader Lease shows an"
                f" earlier leader ({earlier}): its record of today's spend is lost; not starting"
                " a fresh budget (restore the ConfigMap, or `forecaster resume --reset-state`)"
            )

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
