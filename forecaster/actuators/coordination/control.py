"""The on-call kill switch: the ``forecaster-control`` ConfigMap of our namespace.

``data.paused: "true"`` halts the daemon: its leader withdraws every prewarm (placeholders,
buffers, NodePool pauses) on its next tick and then writes nothing but its Lease until the flag
is cleared. ``forecaster pause --reason ...`` / ``forecaster resume`` write it; a GitOps repo can
commit the same ConfigMap instead. A missing ConfigMap (or ``paused`` not ``"true"``) means run.
The ConfigMap is read every tick: a read that fails leaves the tick unable to act, never
acting as if it were clear.
"""

from __future__ import annotations

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import Kube
from forecaster.actuators.manifests import config_map
from forecaster.core.actions import Halt

CONTROL_CONFIG_MAP = "forecaster-control"
PAUSED, REASON, BY, SINCE = "paused", "reason", "by", "since"


class Control:
    """Reads and sets the kill switch in ``namespace``."""

    def __init__(self, kube: Kube, *, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace

    def read(self) -> Halt | None:
        """The switch as the cluster holds it; None: not paused."""
        config_map = self.kube.get_config_map(self.namespace, CONTROL_CONFIG_MAP)
        data = (config_map or {}).get("data") or {}
        if str(data.get(PAUSED, "")).strip().lower() != "true":
            return None
        since = str(data.get(SINCE, ""))
        return Halt(
            reason=data.get(REASON) or "no reason given",
            by=data.get(BY, ""),
            since=int(since) if since.isdigit() else None,
        )

    def set(self, halt: Halt | None) -> bool:
        """Turn the switch on (``halt``) or off (None); True if the ConfigMap changed."""
        current = self.kube.get_config_map(self.namespace, CONTROL_CONFIG_MAP)
        data = {PAUSED: "false"}
        if halt is not None:
            data = {PAUSED: "true", REASON: halt.reason, BY: halt.by, SINCE: str(halt.since or "")}
        if current is not None and (current.get("data") or {}) == data:
            return False
        body = config_map(
            name=CONTROL_CONFIG_MAP,
            namespace=self.namespace,
            labels={lbl.MANAGED_BY: lbl.MANAGER},
            data=data,
        )
        self.kube.put_config_map(self.namespace, body, current=current)
        return True
