"""``actuation: auto``: CapacityBuffers where an autoscaler serves them, placeholders otherwise.

Cases, each through the daemon's own reconciler and the real client against the API double
(buffers validated against the vendored v1beta1 CRD, its CEL rules included): with the CRD and
Karpenter acting on buffers, prewarm is one buffer per pool with ``limits`` as a server-side
cap, no placeholder pods, the autoscaler's status and conditions reach ``/api/v1/status``, the
buffer's own headroom is not counted as spare (the target does not oscillate over ticks) and
its nodes are charged to the ledger; without the CRD, placeholders and the reason; with the CRD
but no autoscaler acting on it, placeholders take over after 5 minutes and the buffer is
zeroed; an explicit ``capacitybuffer`` on a cluster without it refuses to start with the field
named; ``doctor`` prints the choice and why; uninstall zeroes a buffer and deletes it only once
the autoscaler reports it drained (else leaves it at 0 replicas and says so).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build, cleanup
from forecaster.cli import main
from forecaster.core.budget import spent_last_day
from forecaster.errors import ConfigError
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.settings import Settings
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble

NS = "forecaster-placeholders"  # the placeholders' namespace
HOME = "forecaster"  # ours: state, Lease, kill switch, Events


def settings(tmp_path: Path, **planning: object) -> Settings:
    return Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "planning": {"budgets": {"max_total_prewarm_gpus": 48}, **planning},
            "pools": [{"name": POOL, "gpus_per_node": 8, "max_prewarm_gpus": 24}],
        }
    )


def cluster(api: KubeApiDouble, *, buffer_controller: bool) -> ClusterSim:
    api.clock = float(T0)
    sim = ClusterSim(api, buffer_controller=buffer_controller)
    sim.busy_pool(POOL)
    return sim


def daemon(tmp_path: Path, api: KubeApiDouble, **planning: object) -> Daemon:
    config = settings(tmp_path, **planning)
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    reconciler = build.build_reconciler(
        config, source=LiveSource(T0 - 2 * 86400, calm_history()), kube=kube
    )
    return Daemon(reconciler=reconciler, pools=(POOL,))


@pytest.fixture
def buffers_api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble(capacity_buffers=True) as api:
        yield api
    assert api.invalid == [], api.invalid  # every buffer passed the CRD schema and CEL rules


def test_auto_prewarms_with_a_buffer_where_karpenter_serves_them(
    tmp_path: Path, buffers_api: KubeApiDouble
) -> None:
    api = buffers_api
    sim = cluster(api, buffer_controller=True)
    d = daemon(tmp_path, api)
    targets, nodes = [], [len(api.objects("nodes"))]
    source = d.reconciler.source
    assert isinstance(source, LiveSource)
    for i in range(6):  # 30 minutes of ticks while Karpenter provisions for the buffer
        now = T0 + 300 * i
        if i:
            source.append(*[source.values[-1]] * 5)  # demand holds steady
        api.clock = float(now)
        d.reconcile(now)
        sim.step()
        record = d.last
        assert record is not None and record.errors == (), record.errors if record else None
        targets.append(record.plan.pool(POOL).target_gpus)
        nodes.append(len(api.objects("nodes")))
    (buffer,) = api.objects("capacitybuffers", NS)
    assert api.objects("jobs", NS) == [] and api.objects("pods", NS) == []
    assert buffer["spec"]["limits"] == {"nvidia.com/gpu": "24"}  # max_prewarm_gpus, server-side
    assert buffer["spec"]["replicas"] * 8 == targets[-1] >= 8
    assert len(set(targets)) == 1, f"the buffer's own headroom was taken as spare: {targets}"
    assert nodes[-1] > nodes[0]  # Karpenter brought capacity up for the buffer
    status = TestClient(create_app(d)).get("/api/v1/status").json()["pools"][POOL]
    assert status["backend"].startswith("capacitybuffer (auto: CapacityBuffers are served")
    assert "ReadyForProvisioning=True" in status["buffer"]
    assert (
        f"{buffer['spec']['replicas']} of {buffer['spec']['replicas']} chunk(s)" in status["buffer"]
    )
    assert spent_last_day(d.reconciler.state.ledger) > 0  # buffer nodes are charged


def test_auto_uses_placeholders_where_buffers_are_not_served(tmp_path: Path) -> None:
    with KubeApiDouble() as api:
        cluster(api, buffer_controller=False)
        d = daemon(tmp_path, api)
        d.reconcile(T0)
        assert api.objects("jobs", NS)
        report = d.last.actuation  # type: ignore[union-attr]
        assert report is not None
        assert report.backend[POOL] == (
            "placeholders (auto: the cluster does not serve"
            " autoscaling.x-k8s.io/v1beta1 CapacityBuffers)"
        )


def test_auto_falls_back_when_no_autoscaler_acts_on_buffers(
    tmp_path: Path, buffers_api: KubeApiDouble
) -> None:
    api = buffers_api
    sim = cluster(api, buffer_controller=False)  # the CRD is installed, the gate is off
    d = daemon(tmp_path, api)
    d.reconcile(T0)
    (buffer,) = api.objects("capacitybuffers", NS)
    assert buffer["spec"]["replicas"] > 0 and api.objects("jobs", NS) == []
    for i in range(1, 4):
        now = T0 + 150 * i
        api.clock = float(now)
        sim.step()
        d.reconcile(now)
    (buffer,) = api.objects("capacitybuffers", NS)
    assert buffer["spec"]["replicas"] == 0  # zeroed, not deleted (Karpenter's stuck-node bug)
    assert api.objects("jobs", NS)
    backend = d.last.actuation.backend[POOL]  # type: ignore[union-attr]
    assert backend.startswith("placeholders (auto: CapacityBuffers are served but no autoscaler")


def test_explicit_capacitybuffer_without_the_crd_refuses_to_start(tmp_path: Path) -> None:
    with KubeApiDouble() as api:
        cluster(api, buffer_controller=False)
        with pytest.raises(ConfigError, match=r"planning\.actuation: capacitybuffer"):
            daemon(tmp_path, api, actuation="capacitybuffer")


@pytest.mark.parametrize(
    ("served", "expected"),
    [
        (True, "backend: capacitybuffer (auto: CapacityBuffers are served"),
        (False, "backend: placeholders (auto: the cluster does not serve"),
    ],
)
def test_doctor_says_which_backend_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], served: bool, expected: str
) -> None:
    with KubeApiDouble(capacity_buffers=served) as api:
        cluster(api, buffer_controller=served)
        path = tmp_path / "forecaster.yaml"
        path.write_text(yaml.safe_dump(settings(tmp_path).model_dump(mode="json")))
        main(["doctor", "--config", str(path), "--kube-host", api.url])
    assert expected in capsys.readouterr().out


def uninstall_after_a_prewarm(
    tmp_path: Path, api: KubeApiDouble, sleep: Callable[[ClusterSim, float], None]
) -> list[str]:
    """Prewarm with Karpenter serving buffers, then the uninstall cleanup (``sleep`` waits)."""
    sim = cluster(api, buffer_controller=True)
    daemon(tmp_path, api).reconcile(T0)
    sim.step()
    (buffer,) = api.objects("capacitybuffers", NS)
    assert buffer["status"]["replicas"] > 0
    kube = Kube(api_client(host=api.url), dry_run=False)
    undone = cleanup.cleanup(
        kube, namespace=HOME, placeholders=NS, wall=lambda: float(T0), sleep=lambda s: sleep(sim, s)
    )
    assert undone.failed == []
    return undone.changed


def test_uninstall_zeroes_the_buffer_and_deletes_it_once_drained(
    tmp_path: Path, buffers_api: KubeApiDouble
) -> None:
    """Karpenter's stuck-node bug: never delete a buffer that still holds capacity."""
    api = buffers_api
    steps: list[float] = []

    def sleep(sim: ClusterSim, seconds: float) -> None:  # Karpenter catches up meanwhile
        steps.append(seconds)
        sim.step()

    changed = uninstall_after_a_prewarm(tmp_path, api, sleep)
    assert steps == [5.0] and "CapacityBuffer of gpu-a deleted (after 0 replicas)" in changed
    assert api.objects("capacitybuffers", NS) == [] and api.objects("podtemplates", NS) == []


def test_a_buffer_karpenter_has_not_drained_is_left_at_zero(
    tmp_path: Path, buffers_api: KubeApiDouble
) -> None:
    api = buffers_api
    changed = uninstall_after_a_prewarm(tmp_path, api, lambda sim, s: None)
    (buffer,) = api.objects("capacitybuffers", NS)  # Karpenter never caught up: not deleted
    assert buffer["spec"]["replicas"] == 0 and buffer["status"]["replicas"] > 0
    assert any("left at 0 replicas" in line for line in changed)
