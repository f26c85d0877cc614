"""Carry out ``core.actions`` commands on the cluster: decide first (core), act second (here).

The commands arrive decided and ordered (``core.actions.commands``: protect a NodePool before
prewarm, restore it after): the actuator makes no policy decision. What it does decide is how to
carry a command out safely - which backend serves the pool's prewarm now (any registered
``prewarm.base.PrewarmBackend`` the cluster serves; on a switch every other one is emptied first,
so no prewarm is held twice) and what the objects look like now (each writer reads before it
writes). It names backends, never branches on one.

An API error on one pool is recorded, that pool's remaining commands are skipped (a failed
protection must not be followed by prewarm), and the other pools still act; every write is
atomic on its own (a NodePool patch carries the record of originals), placeholders are labelled
and expire by themselves, so the next tick always converges.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from forecaster.actuators.events import Events
from forecaster.actuators.nodepools import NodePools
from forecaster.actuators.prewarm.backends import BackendChoice, BackendDetector
from forecaster.actuators.prewarm.base import Prewarm, PrewarmBackend
from forecaster.actuators.prewarm.placeholders import Applied, PlaceholderSpec
from forecaster.core.actions import (
    ActuationReport,
    Command,
    ProtectNodePool,
    SetPrewarm,
)
from forecaster.errors import ActuationError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PoolActuation:
    """How one pool is actuated."""

    spec: PlaceholderSpec
    backend: str | None = None
    """The pool's own backend; None: the cluster-wide choice (``BackendDetector``)."""
    limit_gpus: int | None = None
    """A buffer's ``limits`` (the pool's max_prewarm_gpus): a server-side second cap."""
    protect_consolidate_after: str = "30m"
    protect_seconds: int = 3600
    """Deadline of a NodePool protection; past it ``cleanup --expired`` restores it."""


class Actuator:
    """Turns plans into prewarm backend and NodePool writes."""

    def __init__(
        self,
        *,
        backends: Mapping[str, PrewarmBackend],
        nodepools: NodePools,
        events: Events,
        pools: dict[str, PoolActuation],
        detector: BackendDetector | None = None,
    ) -> None:
        """``backends``: those the cluster serves, by name; ``detector`` None: every pool
        without a backend of its own uses placeholders."""
        self.backends = dict(backends)
        self.nodepools = nodepools
        self.pools = pools
        self.detector = detector
        self.events = events
        self._backends: dict[str, str] = {}  # what each pool last prewarmed with

    def backend(self, pool: str, *, now: int) -> BackendChoice:
        """The backend ``pool`` uses at ``now``, and why."""
        own = self.pools[pool].backend
        if own is not None:
            return BackendChoice(own, f"configured for the pool: backend {own}")
        if self.detector is None:
            return BackendChoice("placeholders", "configured: actuation placeholders")
        return self.detector.current(now)

    def apply(self, commands: Sequence[Command], *, now: int) -> ActuationReport:
        """Carry out ``commands`` in order; errors are per pool (see module docstring)."""
        report = ActuationReport()
        for command in commands:
            pool = command.pool
            if pool in report.errors:
                continue  # this pool failed earlier this tick: the next tick retries it whole
            if pool not in self.pools:
                report.errors[pool] = f"pool {pool} has no actuation configured"
                continue
            try:
                self._carry_out(command, report, now=now)
            except ActuationError as exc:
                log.error("pool %s: actuation failed, next tick retries: %s", pool, exc)
                report.errors[pool] = str(exc)
            except Exception as exc:  # a malformed object of one pool must not stop the others
                log.exception("pool %s: actuation failed on an unexpected object", pool)
                report.errors[pool] = f"{type(exc).__name__}: {exc}"
        return report

    def _carry_out(self, command: Command, report: ActuationReport, *, now: int) -> None:
        name = command.pool
        config = self.pools[name]
        if isinstance(command, ProtectNodePool):
            if self.nodepools.protect(
                name,
                consolidate_after=config.protect_consolidate_after,
                now=now,
                seconds=config.protect_seconds,
            ):
                report.nodepool[name] = "protected"
        elif isinstance(command, SetPrewarm):
            self._set_prewarm(name, config, command, report, now=now)
        elif self.nodepools.restore(name):
            report.nodepool[name] = "restored"
            conflict = self.nodepools.conflicts.pop(name, None)
            if conflict is not None:  # reaches /api/v1/status, the errors metric and an Event
                report.errors[name] = conflict
                self.events.nodepool_conflict(name, conflict, now=now)

    def _set_prewarm(
        self,
        name: str,
        config: PoolActuation,
        command: SetPrewarm,
        report: ActuationReport,
        *,
        now: int,
    ) -> None:
        choice = self.backend(name, now=now)
        report.backend[name] = f"{choice.backend} ({choice.reason})"
        chosen = self.backends.get(choice.backend)
        if chosen is None:
            raise ActuationError(f"pool {name}: backend {choice.backend} is not served here")
        # first tick or a switch: withdraw the others first, so no prewarm is held twice
        if self._backends.get(name) != choice.backend:
            for other, backend in self.backends.items():
                withdrawn = (
                    backend.withdraw(config.spec, now=now) if other != choice.backend else None
                )
                if withdrawn:  # what it ended is charged even if the converge below fails
                    _charge(report, name, withdrawn)
        asked = Prewarm(config.spec, command.units, command.images, config.limit_gpus, now)
        applied = chosen.converge(asked)
        _charge(report, name, applied)
        status = chosen.status(name)
        if status is not None:
            report.buffer_status[name] = status
        self._backends[name] = choice.backend


def _charge(report: ActuationReport, pool: str, applied: Applied) -> None:
    """Add what one backend did for ``pool`` to the tick's report (two may act on a switch)."""
    report.created[pool] = report.created.get(pool, []) + list(applied.created)
    report.deleted[pool] = report.deleted.get(pool, []) + list(applied.deleted)
    wasted = report.wasted_gpu_hours.get(pool, 0.0)
    report.wasted_gpu_hours[pool] = wasted + applied.wasted_gpu_hours
    report.used_gpus[pool] = report.used_gpus.get(pool, 0) + applied.used_gpus
