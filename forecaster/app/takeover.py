"""What ``forecaster resume`` gives back besides the kill switch: the Lease and the state.

After ``forecaster cleanup`` the leader Lease is held by cleanup for an hour (so no replica
prewarms behind an uninstall); ``resume`` releases that hold at once. With ``--reset-state`` it
also writes a fresh state - the operator's explicit consent to start a new daily GPU-hours budget
when the old state was lost or cannot be read (the daemon refuses to assume one by itself).
"""

from __future__ import annotations

import contextlib

from forecaster.actuators.coordination.leases import release_fence
from forecaster.actuators.coordination.state_store import ConfigMapStateStore
from forecaster.actuators.kube import Kube
from forecaster.errors import ActuationError
from forecaster.reconcile.state import ServiceState
from forecaster.settings import Settings


def give_back(settings: Settings, kube: Kube, *, reset_state: bool, now: int) -> list[str]:
    """Release a cleanup's Lease hold and, when asked, reset the state; what was done."""
    namespace = settings.namespace
    done = []
    if release_fence(kube, namespace=namespace, wall=lambda: float(now)):
        done.append(
            "released the leader Lease that `forecaster cleanup` held: a replica leads again"
            " within seconds"
        )
    if reset_state:
        store = ConfigMapStateStore(kube, namespace=namespace, name=settings.state_config_map)
        with contextlib.suppress(ActuationError):  # unreadable: replaced all the same
            store.load()  # for its resourceVersion
        state = ServiceState(last_tick=now)
        store.save(state.to_dict())
        done.append(
            f"state reset (ConfigMap {namespace}/{settings.state_config_map}): a fresh daily"
            " GPU-hours budget and error budget from now"
        )
    return done
