"""Stateful property test: two replicas with a Lease (one with a skewed wall clock), tight caps
that bind, random demand, ticks, API faults, restarts that meet state read errors, Karpenter
steps, real pods and an uninstall; the invariants are checked after **every** step.

Invariants (every step): no two live placeholders share a slot; every object of ours ends
without us (placeholder Jobs carry a deadline within the TTL and a finished-TTL, every
placeholder pod is owned by a Job, buffers and NodePool pauses carry a deadline); the GPUs
billed because of us - whole nodes, as the observer charges them - never exceed the total cap
nor the cost cap; the persisted GPU-hours ledger never runs backwards, never loses spend
without its own clock moving, and stays within the daily cap (plus one step of held GPUs); at
most one replica believes it leads; no object ever failed schema validation. After a hand-off
or an uninstall, no NodePool field of ours is left.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from tempfile import mkdtemp

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.observe.observer import observe
from forecaster.app import cleanup
from forecaster.app.build import build_cluster_service
from forecaster.core.budget import spent_last_day
from forecaster.core.planner import Mode
from forecaster.reconcile.state import ServiceState
from forecaster.service.clock import FakeClock
from forecaster.service.scheduler import ClusterService
from forecaster.settings import Settings
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble

NS = "forecaster-placeholders"  # the placeholders' namespace
HOME = "forecaster"  # ours: state, Lease, kill switch, Events
PRICE = 4.0
SKEW = {"a": 0.0, "b": 20.0}  # replica b's wall clock runs 20 s ahead


class DaemonMachine(RuleBasedStateMachine):
    @initialize(
        total=st.sampled_from([4, 12, 24]),  # not whole nodes: charging nodes must bind
        hours=st.sampled_from([8.0, 24.0, 400.0]),
        cost=st.sampled_from([20.0, 52.0, 1000.0]),
        protect=st.booleans(),
    )
    def start(self, total: int, hours: float, cost: float, protect: bool) -> None:
        self.api = KubeApiDouble()
        self.api.__enter__()
        self.api.clock = float(T0)
        self.sim = ClusterSim(self.api)
        self.sim.add_nodepool(POOL, limit_gpus=400)
        for i in range(3):
            self.sim.add_node(POOL)
            self.sim.submit(f"job-{i}", POOL, 8)
        self.sim.step()
        self.original = copy.deepcopy(self.api.objects("nodepools")[0]["spec"])
        # demand has just climbed well past the nodes up: every tick wants prewarm, caps bind
        self.source = LiveSource(T0 - 2 * 86400 - 300, [*calm_history(level=24.0), *[44.0] * 5])
        self.caps = {"total": total, "hours": hours, "cost": cost}
        self.protect = protect
        self.models = Path(mkdtemp())
        self.clocks = {
            name: FakeClock(datetime.fromtimestamp(T0 + skew, tz=UTC))
            for name, skew in SKEW.items()
        }
        self.replicas = {name: self._build(name) for name in SKEW}
        self.ledger_seen: tuple[int, float] | None = None
        self.jobs = 3

    def _build(self, name: str) -> ClusterService:
        config = self._settings()
        kube = Kube(
            api_client(host=self.api.url, timeout_seconds=2),
            dry_run=False,
            retries=1,
            backoff_seconds=0.001,
        )
        service = build_cluster_service(
            config, kube, identity=f"replica-{name}", clock=self.clocks[name]
        )
        service.daemon.reconciler.source = self.source
        return service

    def _settings(self) -> Settings:
        return Settings.model_validate(
            {
                "source": {"kind": "prometheus"},
                "models_dir": str(self.models),
                "planning": {
                    "protect_nodepools": self.protect,
                    "budgets": {
                        "max_total_prewarm_gpus": self.caps["total"],
                        "max_prewarm_gpu_hours_per_day": self.caps["hours"],
                        "max_cost_per_hour": self.caps["cost"],
                    },
                },
                "pools": [
                    {
                        "name": POOL,
                        "max_prewarm_gpus": 64,
                        "placeholder_gpus": 4,  # two share an 8-GPU node
                        "prices": {"on_demand": PRICE},
                    }
                ],
            }
        )

    def teardown(self) -> None:
        self.api.__exit__(None, None, None)

    # ---- the world ----------------------------------------------------------------------
    @rule(change=st.integers(-8, 24), minutes=st.integers(1, 10))
    def demand_moves(self, change: int, minutes: int) -> None:
        last = self.source.values[-1]
        self.source.append(*np.linspace(last, max(0.0, last + change), minutes + 1)[1:])

    @rule(seconds=st.sampled_from([5, 30, 60, 300, 1800]))
    def time_passes(self, seconds: int) -> None:
        for clock in self.clocks.values():
            clock.advance(seconds)
        self.api.clock += seconds
        self.sim.step()

    def _wait(self, seconds: float) -> None:
        self.time_passes(round(seconds))

    @rule(name=st.sampled_from(list(SKEW)))
    def tick(self, name: str) -> None:
        replica = self.replicas[name]
        while self.source.end < self.api.clock:  # demand data keeps up with time
            self.source.append(self.source.values[-1])
        replica.renew()
        replica.reconcile()

    @rule(
        path=st.sampled_from([r"/pods", r"/jobs", r"/nodepools/", r"/configmaps", r"/leases"]),
        status=st.sampled_from([500, 409, 503]),
        times=st.integers(1, 6),
    )
    def api_fault(self, path: str, status: int, times: int) -> None:
        self.api.faults.add("*", path, status=status, times=times)

    @rule(name=st.sampled_from(list(SKEW)), unreadable_state=st.booleans())
    def restart(self, name: str, unreadable_state: bool) -> None:
        self.replicas[name].elector.step_down("restarted")
        if unreadable_state:
            self.api.faults.add("GET", r"/configmaps/", status=500, times=4)
        self.replicas[name] = self._build(name)

    @rule()
    def karpenter_step(self) -> None:
        self.sim.step()

    @rule(gpus=st.sampled_from([1, 8]))
    def real_pod_arrives(self, gpus: int) -> None:
        self.jobs += 1
        self.sim.submit(f"job-{self.jobs}", POOL, gpus)
        self.sim.step()

    @rule()
    def uninstall(self) -> None:
        self.api.faults.clear()
        for replica in self.replicas.values():
            replica.elector.step_down("uninstall")
        cleanup.cleanup(
            Kube(api_client(host=self.api.url), dry_run=False),
            namespace=HOME,
            placeholders=NS,
            wall=lambda: self.api.clock,
            sleep=self._wait,  # the old leader's deadline is waited out in simulated time
        )
        assert [j for j in self.api.objects("jobs", NS) if _live(j)] == []
        assert self.api.objects("nodepools")[0]["spec"] == self.original
        assert "annotations" not in self.api.objects("nodepools")[0]["metadata"]

    # ---- invariants, after every step ------------------------------------------------------
    @invariant()
    def everything_of_ours_ends_without_us(self) -> None:
        live = [j for j in self.api.objects("jobs", NS) if _live(j)]
        slots = [j["metadata"]["labels"]["forecaster.io/slot"] for j in live]
        assert len(slots) == len(set(slots)), slots
        for job in self.api.objects("jobs", NS):
            assert job["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "forecaster"
            assert 0 < job["spec"]["activeDeadlineSeconds"] <= 3600
            assert job["spec"]["ttlSecondsAfterFinished"] > 0
        for pod in self.api.objects("pods", NS):
            assert [o["kind"] for o in pod["metadata"]["ownerReferences"]] == ["Job"]
        record = (self.api.objects("nodepools")[0]["metadata"].get("annotations") or {}).get(
            "forecaster.io/original-disruption"
        )
        assert record is None or json.loads(record)["until"] <= self.api.clock + 3600 + 60
        assert self.api.invalid == []

    @invariant()
    def billed_gpus_within_the_caps(self) -> None:
        kube = Kube(api_client(host=self.api.url), dry_run=True, retries=0)
        pending_faults = list(self.api.faults.rules)  # the check itself must not meet them
        self.api.faults.clear()
        try:
            billed = observe(kube, pools=[POOL], now=int(self.api.clock))[POOL].held_gpus
        finally:
            self.api.faults.rules.extend(pending_faults)
        assert billed is not None
        assert billed <= self.caps["total"], billed
        assert billed * PRICE <= self.caps["cost"] + 1e-6, billed

    @invariant()
    def the_persisted_ledger_never_runs_backwards(self) -> None:
        maps = [m for m in self.api.objects("configmaps", HOME) if m["metadata"]["name"]]
        if not maps:
            return
        state = ServiceState.from_dict(json.loads(maps[0]["data"]["state.json"]))
        clock, spent = state.ledger.clock or 0, spent_last_day(state.ledger)
        # the plan keeps spend + commitment within the cap; between two records at most the
        # total cap's GPUs for one step (the placeholder TTL) can be charged on top
        assert spent <= self.caps["hours"] + self.caps["total"] * 1.0 + 1e-6, spent
        if self.ledger_seen is not None:
            seen_clock, seen_spent = self.ledger_seen
            assert clock >= seen_clock
            if clock == seen_clock:
                assert spent >= seen_spent - 1e-9
        self.ledger_seen = (clock, spent)

    @invariant()
    def at_most_one_leader(self) -> None:
        assert sum(r.elector.is_leader() for r in self.replicas.values()) <= 1

    @invariant()
    def a_hand_off_leaves_no_nodepool_field_of_ours(self) -> None:
        for replica in self.replicas.values():
            last = replica.daemon.last
            if last is None or not replica.elector.is_leader() or last.errors:
                continue
            if last.plan.pool(POOL).mode in (Mode.HANDED_OFF, Mode.RECOVERING):
                nodepool = self.api.objects("nodepools")[0]
                assert nodepool["spec"] == self.original
                assert "annotations" not in nodepool["metadata"]


def _live(job: dict[str, object]) -> bool:
    return not (job.get("status") or {}).get("conditions")  # type: ignore[union-attr]


DaemonMachine.TestCase.settings = settings(
    max_examples=15,
    derandomize=True,  # CI explores the same interleavings every run: no flaky red builds
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
TestDaemonMachine = DaemonMachine.TestCase
