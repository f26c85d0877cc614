"""Every GPU we hold expires without us: kill the daemon, let time pass, nothing of ours remains.

The daemon prewarms two pools (placeholder Jobs with the opt-in NodePool pause, and a
CapacityBuffer) and is killed - between ticks, or in the middle of a tick between two writes.
No daemon runs afterwards: only Kubernetes (the double's Job controller, TTL controller, garbage
collector, scheduler and Karpenter) and the ``cleanup --expired`` CronJob. Past every deadline
there are zero placeholder pods or Jobs, zero non-zero buffers of ours, and every NodePool is
exactly as the operator last set it. Before the deadlines the CronJob changes nothing.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build, cleanup
from forecaster.cli import main
from forecaster.settings import Settings
from forecaster.testing.fakes import T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble

NS = "forecaster-placeholders"  # the placeholders' namespace
HOME = "forecaster"  # ours: state, Lease, kill switch, Events
POOLS = ("gpu-a", "gpu-b")


def settings(tmp_path: Path) -> Settings:
    return Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "planning": {"protect_nodepools": True},
            "pools": [
                {"name": "gpu-a", "max_prewarm_gpus": 32, "backend": "placeholders"},
                {"name": "gpu-b", "max_prewarm_gpus": 32, "backend": "capacitybuffer"},
            ],
        }
    )


class Killed(BaseException):
    """The daemon process dies (not an error it could handle)."""


@pytest.mark.parametrize("kill_after_writes", [1, 3, 6, None])
def test_nothing_of_ours_outlives_its_deadline_without_the_daemon(
    tmp_path: Path, kill_after_writes: int | None
) -> None:
    with KubeApiDouble(capacity_buffers=True) as api:
        api.clock = float(T0)
        sim = ClusterSim(api)
        for pool in POOLS:
            sim.add_nodepool(pool, limit_gpus=200, budgets=[{"nodes": "10%"}])
            sim.add_node(pool)
            sim.submit(f"job-{pool}", pool, 8)
        sim.step()
        operator_set = {n["metadata"]["name"]: copy.deepcopy(n) for n in api.objects("nodepools")}
        config = settings(tmp_path)
        kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
        writes = {"n": 0}
        if kill_after_writes is not None:
            real_write = kube._write

            def dying_write(*args: object, **kwargs: object) -> None:
                writes["n"] += 1
                if writes["n"] > kill_after_writes:
                    raise Killed
                real_write(*args, **kwargs)  # type: ignore[arg-type]

            kube._write = dying_write  # type: ignore[method-assign]
        loop = build.build_reconciler(
            config, source=LiveSource(T0 - 2 * 86400, calm_history()), kube=kube
        )
        try:
            for minute in range(0, 5):
                api.clock = float(T0 + 60 * minute)
                loop.tick(T0 + 60 * minute)
                sim.step()
        except Killed:
            pass
        held = [p for p in api.objects("pods", NS) if p["status"]["phase"] == "Running"]
        buffers = [b for b in api.objects("capacitybuffers", NS) if b["spec"]["replicas"]]
        if kill_after_writes is None:
            assert held or api.objects("jobs", NS)
            assert buffers and any(
                "forecaster.io/original-disruption" in (n["metadata"].get("annotations") or {})
                for n in api.objects("nodepools")
            )
        # the daemon is gone. Before any deadline the CronJob leaves everything alone ...
        assert (
            cleanup.cleanup(
                Kube(api_client(host=api.url), dry_run=False),
                namespace=HOME,
                placeholders=NS,
                expired_at=T0 + 600,
            ).changed
            == []
        )
        # ... and past every deadline nothing of ours is left, with no daemon running
        for _ in range(3):
            api.clock += 3600
            sim.step()
            done = cleanup.cleanup(
                Kube(api_client(host=api.url), dry_run=False),
                namespace=HOME,
                placeholders=NS,
                expired_at=int(api.clock),
            )
            assert done.failed == []
        assert api.objects("jobs", NS) == [] and api.objects("pods", NS) == []
        assert all(b["spec"]["replicas"] == 0 for b in api.objects("capacitybuffers", NS))
        for nodepool in api.objects("nodepools"):
            before = operator_set[nodepool["metadata"]["name"]]
            assert nodepool["spec"] == before["spec"]
            assert nodepool["metadata"].get("annotations") == before["metadata"].get("annotations")
        assert api.invalid == []


def test_the_expiry_cronjob_command_changes_nothing_before_a_deadline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(settings(tmp_path).model_dump_json())
    with KubeApiDouble(capacity_buffers=True) as api:
        ClusterSim(api).add_nodepool("gpu-a", limit_gpus=200)
        before = len(api.writes())
        assert main(["cleanup", "--expired", "--config", str(path), "--kube-host", api.url]) == 0
        assert "cleanup: nothing to undo" in capsys.readouterr().out
        assert len(api.writes()) == before
