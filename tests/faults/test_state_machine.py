"""Stateful property test: random interleavings of demand, ticks, API faults, restarts, config
reloads and Karpenter steps against the API double; the invariants hold after every step.

Invariants: no two live placeholders share a slot; every placeholder is a Job of ours (label)
that Kubernetes ends by itself (activeDeadlineSeconds from the Job's start, then
ttlSecondsAfterFinished) and every placeholder pod is owned by one; right after a tick that met
no fault the live placeholders are exactly the plan's target, and the GPUs billed because of us
(whole nodes, as the observer charges them) never exceed the current cap; a NodePool the plan
does not protect is exactly its original; no object ever failed schema validation.
"""

from __future__ import annotations

import copy
from pathlib import Path
from tempfile import mkdtemp

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.observer import observe
from forecaster.service import app
from forecaster.service.loop import Reconciler, TickRecord
from forecaster.settings import Settings
from tests.kubeapi.cluster import ClusterSim
from tests.kubeapi.server import KubeApiDouble
from tests.service.fakes import POOL, T0, LiveSource, calm_history

NS = "forecaster"


class DaemonMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
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
        self.source = LiveSource(T0 - 2 * 86400, calm_history(level=24.0))
        self.now = T0
        self.cap = 32
        self.models = Path(mkdtemp())
        self.reconciler = self._build()
        self.last: TickRecord | None = None
        self.faulted = False
        self.fresh = False
        self.jobs = 3

    def _build(self) -> Reconciler:
        config = Settings.model_validate(
            {
                "source": {"kind": "prometheus"},
                "models_dir": str(self.models),
                "planning": {"budgets": {"max_total_prewarm_gpus": self.cap}},
                "pools": [{"name": POOL, "max_prewarm_gpus": 64}],
            }
        )
        kube = Kube(
            api_client(host=self.api.url, timeout_seconds=2),
            dry_run=False,
            retries=1,
            backoff_seconds=0.001,
        )
        return app.build_reconciler(config, source=self.source, kube=kube)

    def teardown(self) -> None:
        self.api.__exit__(None, None, None)

    @rule(change=st.integers(-6, 12), minutes=st.integers(1, 10))
    def demand_moves(self, change: int, minutes: int) -> None:
        last = self.source.values[-1]
        self.source.append(*np.linspace(last, max(0.0, last + change), minutes + 1)[1:])

    @rule(seconds=st.sampled_from([30, 60, 300]))
    def tick(self, seconds: int) -> None:
        self.now = max(self.now + seconds, self.source.end)
        self.api.clock = float(self.now)
        self.last = self.reconciler.tick(self.now)
        self.faulted = bool(self.last.errors) or bool(
            self.api.faults.rules and any(r.times for r in self.api.faults.rules)
        )
        self.api.faults.clear()
        self.fresh = True  # the cluster is as this tick left it

    @rule(
        path=st.sampled_from([r"/pods", r"/jobs", r"/nodepools/", r"/configmaps"]),
        status=st.sampled_from([500, 409, 503]),
        times=st.integers(1, 6),
    )
    def api_fault(self, path: str, status: int, times: int) -> None:
        self.fresh = False
        self.api.faults.add("*", path, status=status, times=times)

    @rule()
    def restart(self) -> None:
        self.fresh = False
        self.reconciler = self._build()

    @rule(cap=st.sampled_from([0, 8, 16, 32, 64]))
    def reload_config(self, cap: int) -> None:
        self.fresh = False
        self.cap = cap
        self.reconciler = self._build()
        self.last = None

    @rule()
    def karpenter_step(self) -> None:
        self.fresh = False
        self.api.clock = float(self.now)
        self.sim.step()

    @rule(gpus=st.sampled_from([1, 8]))
    def real_pod_arrives(self, gpus: int) -> None:
        self.fresh = False
        self.jobs += 1
        self.sim.submit(f"job-{self.jobs}", POOL, gpus)
        self.sim.step()

    def _placeholders(self) -> list[dict[str, object]]:
        """Placeholder Jobs that have not finished."""
        return [
            j for j in self.api.objects("jobs", NS) if not j.get("status", {}).get("conditions")
        ]

    @invariant()
    def no_duplicate_slots_and_all_ours(self) -> None:
        if not hasattr(self, "api"):
            return
        live = self._placeholders()
        slots = [p["metadata"]["labels"]["forecaster.io/slot"] for p in live]  # type: ignore[index]
        assert len(slots) == len(set(slots)), slots
        for job in self.api.objects("jobs", NS):
            assert job["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "forecaster"
            assert 0 < job["spec"]["activeDeadlineSeconds"] <= 3600
            assert job["spec"]["ttlSecondsAfterFinished"] > 0
        for pod in self.api.objects("pods", NS):
            assert [o["kind"] for o in pod["metadata"]["ownerReferences"]] == ["Job"]
        assert self.api.invalid == []

    @invariant()
    def caps_and_nodepool_after_a_clean_tick(self) -> None:
        if not hasattr(self, "api") or self.last is None or self.faulted or not self.fresh:
            return
        pool_plan = self.last.plan.pool(POOL)
        held = sum(
            int(p["metadata"]["annotations"]["forecaster.io/gpus"]) for p in self._placeholders()
        )  # type: ignore[index]
        assert held <= self.cap
        assert held == pool_plan.target_gpus
        kube = Kube(api_client(host=self.api.url), dry_run=True)
        billed = observe(kube, pools=[POOL], now=self.now)[POOL].held_gpus
        assert billed is not None and billed <= self.cap
        if not pool_plan.protect_nodepool:
            assert self.api.objects("nodepools")[0]["spec"] == self.original


DaemonMachine.TestCase.settings = settings(
    max_examples=20,
    derandomize=True,  # CI explores the same interleavings every run: no flaky red builds
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
TestDaemonMachine = DaemonMachine.TestCase
