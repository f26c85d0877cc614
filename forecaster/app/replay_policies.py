"""Replay policies by name: the registry ``replay``, ``replay --frontier`` and the training job's
operating-point choice build their policies from (``replay_policy``).

A name may carry a knob after a colon (``static:32``, ``burst:0.5``, ``continuation:60``); the
policy's maker reads it. A new policy is one class following ``simulation.twin.Policy`` and one
``register_policy(name, maker)`` call (``docs/extending.md``); ``policy_names()`` lists them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from forecaster.app.build_replay import predictive, replay_pool_policy
from forecaster.core.jobs import JobTrace
from forecaster.core.policy import prewarm_window_seconds
from forecaster.errors import ConfigError, ForecasterError
from forecaster.registry import REPLAY_POLICY, Registry
from forecaster.simulation.policies import (
    SUBMISSION_GAP_SECONDS,
    Burst,
    Oracle,
    PlannedPrewarm,
    Reactive,
    Schedule,
    Static,
    continuation,
)
from forecaster.simulation.replay import ReplaySetup
from forecaster.simulation.twin import Policy

PolicyMaker = Callable[["PolicyRequest"], Policy]
"""Builds a fresh policy for one replay from what was asked."""


@dataclass(frozen=True)
class PolicyRequest:
    """What a policy is built from: its knob (the text after the colon, None without one), the
    replay's setup and trace, and the plain ``static`` policy's default headroom."""

    knob: str | None
    setup: ReplaySetup
    jobs: JobTrace
    static_gpus: int = 64


@dataclass(frozen=True)
class _Entry:
    make: PolicyMaker
    knob: str | None
    """What the knob sets, for messages (None: the policy takes none)."""
    frontier_knobs: tuple[float, ...]
    """The knobs ``replay --frontier`` sweeps it at (none: not swept; the built-ins have
    curves of their own)."""


POLICIES: Registry[_Entry] = Registry(REPLAY_POLICY)


def register_policy(
    name: str,
    make: PolicyMaker,
    *,
    knob: str | None = None,
    frontier_knobs: tuple[float, ...] = (),
) -> None:
    """Make ``name`` (``name:KNOB`` when ``knob`` says what the knob sets) a replay policy;
    with ``frontier_knobs`` ``replay --frontier`` sweeps it too and chooses its knob per
    budget on the tuning window, as it does burst's."""
    if ":" in name:
        raise ConfigError(f"replay policy {name!r}: the colon is the knob's")
    if frontier_knobs and knob is None:
        raise ConfigError(f"replay policy {name!r}: frontier knobs for a policy without a knob")
    POLICIES.register(name, _Entry(make, knob, tuple(frontier_knobs)))


def policy_names() -> tuple[str, ...]:
    """Every registered policy, built-ins first."""
    return POLICIES.names()


def frontier_knobs() -> dict[str, tuple[float, ...]]:
    """The registered policies ``replay --frontier`` sweeps besides its own curves."""
    return {name: e.frontier_knobs for name, e in POLICIES.items() if e.frontier_knobs}


def replay_policy(
    name: str, setup: ReplaySetup, *, jobs: JobTrace, static_gpus: int = 64
) -> Policy:
    """A fresh policy by name (``static:K`` sets the headroom, ``burst:ALPHA`` the burst share,
    ``continuation:GAP`` the seconds between two jobs of one submission; the setup's floor is
    the floor of the planning ones)."""
    base, colon, knob = name.partition(":")
    entry = POLICIES.get(base) if base in POLICIES else None
    if entry is None or (colon and entry.knob is None):
        knobs = ", ".join(f"{n}:{e.knob}" for n, e in POLICIES.items() if e.knob)
        raise ForecasterError(
            f"unknown policy {name!r}; known: {', '.join(policy_names())} ({knobs})"
        )
    return entry.make(PolicyRequest(knob if colon else None, setup, jobs, static_gpus))


def _static(asked: PolicyRequest) -> Policy:
    gpus = int(asked.knob) if asked.knob is not None else asked.static_gpus
    return Static(gpus, name=f"static:{gpus}")


def _schedule(asked: PolicyRequest) -> Policy:
    return Schedule(
        lead_seconds=asked.setup.lead_seconds, gpus_per_node=asked.setup.twin.gpus_per_node
    )


def _burst(asked: PolicyRequest) -> Policy:
    setup = asked.setup
    alpha = float(asked.knob) if asked.knob is not None else 1.0
    return Burst(
        window_seconds=prewarm_window_seconds(
            setup.lead_seconds, int(Burst.tick_seconds), batch_seconds=int(setup.twin.batch_seconds)
        ),
        gpus_per_node=setup.twin.gpus_per_node,
        max_gpus=setup.max_prewarm_gpus,
        alpha=alpha,
        name=f"burst:{alpha:g}",
    )


def _burst_live(asked: PolicyRequest) -> Policy:
    """The burst rule as the daemon runs it (``pools[].policy: burst``): its reconcile loop with
    the rule, refitted weekly, in the arrivals model's place - what the verdict's burst
    configuration runs; ``burst:ALPHA`` is the same formula outside the daemon."""
    alpha = float(asked.knob) if asked.knob is not None else 1.0
    policy = predictive(dataclasses.replace(asked.setup, burst_alpha=alpha))
    policy.name = f"burst-live:{alpha:g}"
    return policy


def _oracle(asked: PolicyRequest) -> Policy:
    """Every coming job, through the daemon's planner and caps."""
    planner = PlannedPrewarm(replay_pool_policy(asked.setup), asked.setup.budgets)
    return Oracle(planner, asked.setup.window_seconds, asked.jobs)


def _continuation(asked: PolicyRequest) -> Policy:
    """The rest of each started submission, through the daemon's planner and caps."""
    planner = PlannedPrewarm(replay_pool_policy(asked.setup), asked.setup.budgets)
    gap = float(asked.knob) if asked.knob is not None else SUBMISSION_GAP_SECONDS
    return continuation(planner, asked.setup.window_seconds, asked.jobs, gap_seconds=gap)


register_policy("reactive", lambda asked: Reactive())
register_policy("static", _static, knob="K")
register_policy("schedule", _schedule)
register_policy("burst", _burst, knob="ALPHA")
register_policy("burst-live", _burst_live, knob="ALPHA")
register_policy("predictive", lambda asked: predictive(asked.setup))
register_policy("oracle", _oracle)
register_policy("continuation", _continuation, knob="GAP")
