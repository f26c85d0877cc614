"""What a replay simulates when no config describes the pool: a request value, light to import.

The ``replay`` command's argument parser takes its defaults from here (so ``--help`` loads no
model library), the benches ask for pools directly, and ``app.build_replay.simulated_setup``
turns one into a running ``ReplaySetup``.
"""

from __future__ import annotations

from dataclasses import dataclass

from forecaster.core.policy import MIN_WAKE_SECONDS
from forecaster.simulation.declared_notice import NoticeMix

SAMPLE_TRACE_EPOCH = "2026-01-08T00:00:00Z"
"""Day 0 of the job traces a replay runs unless told otherwise (``replay --epoch``)."""


@dataclass(frozen=True)
class SimulatedPool:
    """The pool a replay simulates when no config describes it: what the ``replay`` command's
    flags ask for (its defaults are these) and what the benches ask for directly;
    ``app.build_replay.simulated_setup`` turns it into a ``ReplaySetup``."""

    gpus_per_node: int = 8
    provision_seconds: float = 60
    image_pull_seconds: float = 300
    decide_every_seconds: int = 15
    wake_seconds: int = MIN_WAKE_SECONDS
    """0: the daemon's pod watch is off (decisions on ticks only)."""
    consolidate_after_seconds: float = 300
    warm_image: bool = True
    max_prewarm_gpus: int = 1024
    price_on_demand: float = 4.10
    price_spot: float = 1.60
    model: str = "quantreg-raw"
    quantile: float = 0.95
    floor_gpus: int = 0
    backend: str = "placeholders"
    kueue_quota_gpus: int | None = None
    kueue_notice_seconds: float = 0
    notice: NoticeMix | None = None
