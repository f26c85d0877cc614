"""Quiet ticks: when the cluster looks as it did at the last plan, that plan stands.

A tick whose observation matches the last plan's - no pod created, started, finished or
preempted, no node come or gone, the kill switch as it was, no announced work come into or left
the window - within ``step_seconds`` of that plan keeps the plan and writes nothing
(``TickRecord.replanned`` False). So the loop answers new pods within one tick (15 s) yet
forecasts, plans and acts about once a minute when nothing happens.

``scripts/mutation_check.py`` pins exact lines of this module: a change to a pinned line updates
the mutation's strings there, never drops the mutation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from forecaster.core.actions import ActuationReport, Halt
from forecaster.core.cluster import Observation, PoolSnapshot
from forecaster.core.error_budget import ErrorBudgetState
from forecaster.core.notice import due_items
from forecaster.core.planner import Mode
from forecaster.reconcile.records import TickRecord


@dataclass(frozen=True)
class Now:
    """This tick as the quiet test sees it."""

    at: int
    snapshots: Mapping[str, PoolSnapshot] | None
    halt: Halt | None
    had_errors: bool
    """Whether this tick met a problem already (then it plans)."""


def is_quiet(
    last: TickRecord | None,
    now: Now,
    *,
    pools: list[str],
    step_seconds: int,
    mode_of: Callable[[str], Mode],
    window_of: Callable[[str], int],
) -> bool:
    """True when the last plan stands: it was complete and recent (within ``step_seconds``,
    so fresh history still triggers a forecast), and every pool looks as it did then."""
    snapshots = now.snapshots
    if last is None or last.errors or now.had_errors or snapshots is None:
        return False
    if not 0 <= now.at - last.at < step_seconds or now.halt != last.halt:
        return False
    for pool_plan in last.plan.pools:
        if mode_of(pool_plan.pool) is not pool_plan.mode:
            return False  # the state changed under the plan (another leader's, a restore)
    for name in pools:
        before = last.pools[name].snapshot if name in last.pools else None
        after = snapshots.get(name)
        if before is None or after is None or not same_pool(before, after):
            return False
        window = window_of(name)
        if due_items(after.announced, now.at, within_seconds=window) != due_items(
            before.announced, last.at, within_seconds=window
        ):
            return False  # announced work came into (or left) the window: plan again
    return True


def kept(
    last: TickRecord,
    snapshots: Mapping[str, PoolSnapshot],
    now: int,
    *,
    budgets: dict[str, ErrorBudgetState],
) -> TickRecord:
    """The record of a quiet tick: the last plan, today's observation and budgets, nothing
    done."""
    pools = {
        name: dataclasses.replace(view, snapshot=snapshots.get(name, view.snapshot))
        for name, view in last.pools.items()
    }
    report = last.actuation
    if report is not None:  # what the backends are stays; nothing was created or wasted
        report = ActuationReport(backend=report.backend, buffer_status=report.buffer_status)
    return dataclasses.replace(
        last,
        at=now,
        pools=pools,
        transitions=(),
        actuation=report,
        evaluations={},
        unattributed=snapshots.unattributed if isinstance(snapshots, Observation) else (),
        skipped=snapshots.skipped if isinstance(snapshots, Observation) else (),
        claimed=snapshots.claimed if isinstance(snapshots, Observation) else (),
        replanned=False,
        notice_ended=(),  # nothing was followed: the last tick's items are counted once
        budgets=budgets,
    )


_NOT_COMPARED = {"observed_at": 0, "measured_lead": None}


def same_pool(before: PoolSnapshot, after: PoolSnapshot) -> bool:
    """Whether two observations would plan alike: all fields equal but the time each was made
    and the measured lead (a slow average, picked up by the next plan)."""
    return before.__dict__ | _NOT_COMPARED == after.__dict__ | _NOT_COMPARED
