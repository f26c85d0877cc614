"""The expiry job and uninstall undo every object on its own, and need no config.

Cases: three NodePools paused past their deadline and two buffers past theirs, one NodePool
answering 409 to every patch and a config that does not validate - one run of the expiry
CronJob's command restores the other two NodePools, zeroes both buffers and exits 1 naming the
NodePool it could not restore; a NodePool with a damaged record does not stop the others either;
uninstall withdraws a pool that left the config (its pause, placeholders and buffer), found by
label and record; the exact arguments the shipped Jobs pass are what these tests run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from forecaster.actuators.prewarm.placeholders import Placeholders, PlaceholderSpec
from forecaster.cli import main
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import held_since, paused_nodepools

NS = "forecaster-placeholders"  # the placeholders' namespace
HOME = "forecaster"
PAUSE = "forecaster.io/original-disruption"


def invalid_config(tmp_path: Path) -> Path:
    """A config the daemon refuses (no pools, a typo) - yet it names the namespace."""
    path = tmp_path / "forecaster.yaml"
    path.write_text(
        f"namespace: {HOME}\nplanning:\n  placeholders:\n    namespace: {NS}\npools: []\n"
        "max_prewarm: 3\n"
    )
    return path


def test_one_expiry_run_undoes_all_it_can_and_exits_1_naming_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with KubeApiDouble(capacity_buffers=True) as api:
        held_since(
            api, ["gpu-a", "gpu-b", "gpu-c"], ["gpu-a", "gpu-c"], since=int(time.time()) - 7200
        )
        api.faults.add("PATCH", "/nodepools/gpu-b$", status=409, times=10_000)  # for ever
        code = main(
            [
                "cleanup",
                "--expired",
                "--config",
                str(invalid_config(tmp_path)),
                "--kube-host",
                api.url,
            ]
        )
        out, err = capsys.readouterr()
        assert code == 1
        assert paused_nodepools(api) == {"gpu-b"}
        assert [b["spec"]["replicas"] for b in api.objects("capacitybuffers", NS)] == [0, 0]
        assert "FAILED NodePool gpu-b: NodePool gpu-b: still conflicting" in err
        assert "1 object(s) could not be undone" in out


def test_a_damaged_record_does_not_stop_the_other_nodepools(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with KubeApiDouble(capacity_buffers=True) as api:
        held_since(api, ["gpu-a", "gpu-b", "gpu-c"], [], since=int(time.time()) - 7200)
        (first,) = [n for n in api.objects("nodepools") if n["metadata"]["name"] == "gpu-a"]
        first["metadata"]["annotations"][PAUSE] = "{not json"
        api.store.replace(("nodepools", "", "gpu-a"), first)
        code = main(["cleanup", "--expired", "--namespace", HOME, "--kube-host", api.url])
        assert code == 1 and paused_nodepools(api) == {"gpu-a"}
        assert "FAILED NodePool gpu-a: NodePool gpu-a: annotation" in capsys.readouterr().err


def test_uninstall_withdraws_a_pool_that_left_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The config names only gpu-a; gpu-old was removed from it while still prewarmed."""
    with KubeApiDouble(capacity_buffers=True) as api:
        now = int(time.time())
        kube = held_since(api, ["gpu-a", "gpu-old"], ["gpu-old"], since=now)
        ClusterSim(api).add_node("gpu-old")
        Placeholders(kube, namespace=NS, priority_class="forecaster-placeholder").apply(
            PlaceholderSpec(pool="gpu-old", gpus=8), target=2, now=now
        )
        path = tmp_path / "forecaster.yaml"
        path.write_text(json.dumps({"pools": [{"name": "gpu-a"}]}))
        assert main(["cleanup", "--config", str(path), "--kube-host", api.url]) == 0
        assert paused_nodepools(api) == set()
        assert api.objects("jobs", NS) == []
        assert api.objects("capacitybuffers", NS) == []  # zeroed, then deleted once drained
        out = capsys.readouterr().out
        assert "NodePool gpu-old: restored" in out and "deleted placeholder" in out
