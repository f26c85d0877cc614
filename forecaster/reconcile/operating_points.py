"""What a pool's chosen operating point overrides: its quantile, floor and SLO, and the shared cap.

A model published with an operating point (``core.operating_point``: chosen at the retrain for
the operator's budget, when one is configured) sets the pool's quantile, its floor, its SLO and -
once every pool has one - the shared GPU-hours/day cap; without one the configured values hold.

``scripts/mutation_check.py`` pins exact lines of this module: a change to a pinned line updates
the mutation's strings there, never drops the mutation.
"""

from __future__ import annotations

import dataclasses

from forecaster.core.error_budget import SloPolicy
from forecaster.core.operating_point import OperatingPoint, following_the_point
from forecaster.core.policy import PoolPolicy
from forecaster.reconcile.records import PoolRuntime, PoolTrack


def point_of(track: PoolTrack | None) -> OperatingPoint | None:
    """The operating point of the pool's current model, if it was published with one."""
    active = track.active if track is not None else None
    return active.operating_point if active is not None else None


def quantile_for(runtime: PoolRuntime, point: OperatingPoint | None) -> float:
    """The quantile the pool plans for: its chosen point's, else the configured one."""
    return point.quantile if point is not None else runtime.target_quantile


def policy_for(runtime: PoolRuntime, point: OperatingPoint | None) -> PoolPolicy:
    """The pool's policy as planned: the floor of its chosen point, else the configured."""
    if point is None or point.floor_gpus == runtime.policy.floor_gpus:
        return runtime.policy
    return dataclasses.replace(runtime.policy, floor_gpus=point.floor_gpus)


def slo_for(slo: SloPolicy, point: OperatingPoint | None) -> SloPolicy:
    """The pool's SLO: following its chosen point, else as set."""
    return slo if point is None else following_the_point(slo, point)
