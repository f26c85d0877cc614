"""The lead measured from what the API server shows (``actuators.lead``), on the API double.

Cases: a node launched for pending work measures its provisioning (created -> Ready) and the
first pod's startup on it (scheduled -> containers ready: the cold image pull); a second pod of
the same image on that node starts warm and is not a cold start; a node Ready at creation is
not a launch; the measurement reaches the
snapshot, the status endpoint and the metrics; the start-up guardrails say when launches take
longer than the configured lead and when image pulls dominate it - and stay quiet otherwise;
slow launches make the reconcile loop forecast (and score) further ahead.
"""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from forecaster.actuators import guardrails
from forecaster.actuators.guardrails import PoolCheck
from forecaster.actuators.kube import Kube
from forecaster.actuators.observe.observer import observe
from forecaster.core.cluster import MeasuredLead
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import reconciler


def launched(
    api: KubeApiDouble, *, pull: float, provision: float = 60, pods: int = 1
) -> ClusterSim:
    """An empty pool; each 8-GPU pod makes Karpenter launch a node, then its image pulls."""
    api.clock = float(T0)
    sim = ClusterSim(api, provision_seconds=provision, image_pull_seconds=pull)
    sim.add_nodepool(POOL, limit_gpus=64)
    for i in range(pods):
        sim.submit(f"train-{i + 1}", POOL, 8)
    for seconds in (0, provision, pull, 5):
        api.clock += seconds
        sim.step()
    return sim


def check(kube: Kube, api: KubeApiDouble, *, lead: int) -> list[str]:
    pool = PoolCheck(
        POOL, allow_unlimited=False, horizon_seconds=900, image_pull_seconds=60, lead_seconds=lead
    )
    findings = guardrails.check(kube, [pool], now=int(api.clock))
    return [
        f.code
        for f in findings
        if f.code in ("lead-longer-than-configured", "image-pull-dominates")
    ]


def test_a_launch_measures_provisioning_and_the_cold_start(api: KubeApiDouble, kube: Kube) -> None:
    sim = launched(api, pull=240)
    sim.submit("train-9", POOL, 0)  # lands on the same node, image already there: warm
    sim.add_node(POOL)  # registered Ready at once: not a launch, not measured
    sim.step()
    snapshot = observe(kube, pools=[POOL], now=int(api.clock))[POOL]
    assert snapshot.measured_lead == MeasuredLead(
        provisioning_seconds=60, startup_seconds=240, launches=1
    )
    assert check(kube, api, lead=120) == ["lead-longer-than-configured", "image-pull-dominates"]
    assert check(kube, api, lead=420) == ["image-pull-dominates"]


def test_a_fast_pull_raises_nothing_and_no_launch_measures_nothing(
    api: KubeApiDouble, kube: Kube
) -> None:
    launched(api, pull=10)
    assert check(kube, api, lead=120) == []
    api.clock += 2 * 86400  # the launch left the last day
    assert observe(kube, pools=[POOL], now=int(api.clock))[POOL].measured_lead is None


def test_the_status_and_metrics_show_the_measured_lead(tmp_path: Path, api: KubeApiDouble) -> None:
    launched(api, pull=240)
    loop = reconciler(tmp_path, api, LiveSource(T0 - 2 * 86400, calm_history()))
    daemon = Daemon(reconciler=loop, pools=(POOL,))
    assert daemon.reconcile(int(api.clock)) is not None
    client = TestClient(create_app(daemon))
    lead = client.get("/api/v1/status").json()["pools"][POOL]["lead"]
    assert lead["measured"] == {
        "total_seconds": 300.0,
        "provisioning_seconds": 60.0,
        "startup_seconds": 240.0,
        "launches": 1,
    }
    assert lead["configured_seconds"] == daemon.lead_seconds(POOL) > 0
    metrics = client.get("/metrics").text
    assert f'forecaster_lead_measured_seconds{{part="startup",pool="{POOL}"}} 240.0' in metrics


def test_slow_launches_make_the_plan_forecast_further_ahead(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    """Three launches of 10 min + 10 min pulls: the loop covers the measured lead (+ margin)
    with the 30 min horizon instead of the configured one, and scores its forecasts there."""
    launched(api, pull=600, provision=600, pods=3)
    loop = reconciler(tmp_path, api, LiveSource(T0 - 2 * 86400, calm_history()))
    configured = loop.pools[0].horizon_seconds
    record = loop.tick(int(api.clock))
    planned = record.pools[POOL].horizon
    assert planned is not None and configured < planned.horizon_seconds == 1800
    assert "measured lead 1200 s over 3 launches" in planned.reason
    pending = loop.state.pool(POOL).pending[-1]
    assert pending.target_time - pending.origin == 1800
