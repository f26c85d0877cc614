"""A signal from outside the package, through the registry's public seam.

``PendingPods`` lives only here: registered with ``app.signals.register_signal`` - no package
file names it. The daemon's observer reads it from the cluster (the real client on the API
double) into each pool's snapshot, ``/api/v1/status`` shows it, and the twin reads the same
signal from its own state into its snapshots, in a replay and in the embedded default's wiring.
A reader that fails is left out of that tick; the pool stays observable.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build, signals
from forecaster.app.build_replay import replay_setup
from forecaster.errors import ActuationError, ConfigError
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.settings import Settings
from forecaster.simulation.policies import Static
from forecaster.simulation.twin import Twin, TwinConfig, TwinView
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import REPLAY_T0, synthetic

NAME = "pending-pods"


class PendingPods:
    """Pods of the pool not scheduled yet, counted from one pod list."""

    name = NAME

    def __init__(self) -> None:
        self.fail = False

    def read(self, kube: Kube, pools: Sequence[str], *, now: int) -> Mapping[str, float]:
        if self.fail:
            raise ActuationError("list pods: 503")
        counts = dict.fromkeys(pools, 0.0)
        for pod in kube.list_pods(namespace=None, labels=None):
            pool = (pod["spec"].get("nodeSelector") or {}).get(lbl.NODEPOOL_LABEL)
            if pool in counts and not pod["spec"].get("nodeName"):  # not scheduled yet
                counts[pool] += 1
        return counts


class TwinPendingPods:
    """The same signal as the twin shows it."""

    name = NAME

    def read(self, view: TwinView) -> float:
        return float(len(view.pending_requests()))  # type: ignore[attr-defined]


@pytest.fixture
def reader() -> Iterator[PendingPods]:
    """``pending-pods`` registered for this test only."""
    with signals.SIGNALS.trial():
        live = PendingPods()
        signals.register_signal(NAME, live=live, twin=TwinPendingPods())
        yield live


def test_the_daemon_reads_it_into_the_snapshot_and_the_status(
    reader: PendingPods, tmp_path: Path
) -> None:
    config = Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "planning": {"actuation": "placeholders"},
            "pools": [{"name": POOL, "gpus_per_node": 8, "max_prewarm_gpus": 24}],
        }
    )
    with KubeApiDouble() as api:
        api.clock = float(T0)
        sim = ClusterSim(api)
        sim.busy_pool(POOL)
        sim.submit("waiting", POOL, 8)  # both nodes are busy: it waits
        kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
        reconciler = build.build_reconciler(
            config, source=LiveSource(T0 - 2 * 86400, calm_history()), kube=kube
        )
        daemon = Daemon(reconciler=reconciler, pools=(POOL,))
        daemon.reconcile(T0)
        snapshot = daemon.last.pools[POOL].snapshot  # type: ignore[union-attr]
        assert snapshot is not None and snapshot.signal(NAME) == 1.0
        status = TestClient(create_app(daemon)).get("/api/v1/status").json()
        assert status["pools"][POOL]["signals"] == {NAME: 1.0}
        reader.fail = True  # a failed reader is left out; the pool is still observed
        daemon.reconcile(T0 + 300)
        snapshot = daemon.last.pools[POOL].snapshot  # type: ignore[union-attr]
        assert snapshot is not None and snapshot.problem is None and snapshot.signals == ()


def test_the_twin_reads_it_into_its_snapshots(reader: PendingPods) -> None:
    jobs = synthetic(2, seed=3)
    setup = replay_setup(
        twin=TwinConfig(),
        epoch=REPLAY_T0,
        start_day=0,
        warmup_days=0,
        end_day=1,
        max_prewarm_gpus=64,
        price_on_demand=1.0,
        price_spot=1.0,
        model="persistence",
        quantile=0.9,
    )
    assert [s.name for s in setup.twin.signals] == [NAME]
    seen: list[float | None] = []

    class Watching(Static):
        def decide(self, view: TwinView):  # type: ignore[no-untyped-def]
            seen.append(view.snapshot().signal(NAME))
            return super().decide(view)

    twin = Twin(jobs, Watching(0), setup.twin, start=setup.start, end=setup.start + 6 * 3600)
    twin.run()
    assert seen and all(v is not None for v in seen) and max(v or 0 for v in seen) > 0


def test_a_name_taken_or_readers_naming_another_signal_are_refused(reader: PendingPods) -> None:
    with pytest.raises(ConfigError, match="registered already"):
        signals.register_signal(NAME, live=PendingPods())
    other = PendingPods()
    other.name = "other"
    with pytest.raises(ConfigError, match="the same name"):
        signals.register_signal("x", live=other)
