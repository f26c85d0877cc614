"""Signal readers: one more reading per pool, from the cluster, into the pool's snapshot.

A reader is registered by name (``app.signals.register_signal``) and asked once per tick for
every pool at once (one list call serves them all). Its readings land in
``PoolSnapshot.signals``; a reader that fails is logged and left out of that tick - a signal
adds to the snapshot, it never makes a pool unobservable.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Protocol

from forecaster.actuators.kube import Kube
from forecaster.errors import ForecasterError

log = logging.getLogger(__name__)


class SignalReader(Protocol):
    """Reads one signal of every pool from the cluster."""

    name: str

    def read(self, kube: Kube, pools: Sequence[str], *, now: int) -> Mapping[str, float]:
        """The signal's value per pool (a pool left out has no reading this tick)."""
        ...


def read_signals(
    kube: Kube, readers: Sequence[SignalReader], pools: Sequence[str], *, now: int
) -> dict[str, tuple[tuple[str, float], ...]]:
    """Each pool's readings, ``(name, value)`` in the readers' order."""
    found: dict[str, list[tuple[str, float]]] = {pool: [] for pool in pools}
    for reader in readers:
        try:
            values = reader.read(kube, pools, now=now)
        except ForecasterError as exc:
            log.warning("signal %s: not read this tick: %s", reader.name, exc)
            continue
        for pool in pools:
            if pool in values:
                found[pool].append((reader.name, float(values[pool])))
    return {pool: tuple(readings) for pool, readings in found.items()}
