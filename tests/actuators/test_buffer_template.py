"""Our CapacityBuffer's PodTemplate is ours, on the API double through the daemon's reconciler.

Cases: a PodTemplate named ``forecaster-<pool>`` that someone else wrote (no label of ours) is
refused - an actuation error of that pool naming it, no buffer made on it, the template left as
it was; a pool whose GPUs per node change gets its template replaced with the new shape, and the
buffer is charged the new chunk size (``forecaster.io/gpus``, what ``held_gpus`` reads).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.prewarm.buffer_backend import CapacityBufferBackend
from forecaster.app import build
from forecaster.reconcile.records import TickRecord
from forecaster.service.daemon import Daemon
from forecaster.settings import Settings
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble

NS = "forecaster-placeholders"  # the placeholders' namespace
HOME = "forecaster"  # ours: state, Lease, kill switch, Events
TEMPLATE = f"forecaster-{POOL}"
GPU = "nvidia.com/gpu"


@pytest.fixture
def api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble(capacity_buffers=True) as server:
        server.clock = float(T0)
        ClusterSim(server, buffer_controller=True).busy_pool(POOL)
        yield server
    assert server.invalid == [], server.invalid


def tick(tmp_path: Path, api: KubeApiDouble, *, gpus_per_node: int, now: int) -> TickRecord:
    """One tick of a daemon prewarming ``POOL`` through a CapacityBuffer."""
    config = Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "planning": {
                "actuation": "capacitybuffer",
                "budgets": {"max_total_prewarm_gpus": 48},
            },
            "pools": [{"name": POOL, "gpus_per_node": gpus_per_node, "max_prewarm_gpus": 24}],
        }
    )
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    source = LiveSource(T0 - 2 * 86400, calm_history(level=40.0))
    loop = build.build_reconciler(config, source=source, kube=kube)
    api.clock = float(now)
    record = Daemon(reconciler=loop, pools=(POOL,)).reconcile(now)
    assert record is not None
    return record


def template_gpus(api: KubeApiDouble) -> Any:
    (template,) = api.objects("podtemplates", NS)
    (container,) = template["template"]["spec"]["containers"]
    return container["resources"]["requests"][GPU]


def test_a_foreign_template_of_our_name_is_refused_not_used(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    foreign = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": TEMPLATE, "namespace": NS, "labels": {"team": "someone"}},
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "big",
                        "image": "them/big:1",
                        "resources": {"requests": {GPU: "8"}, "limits": {GPU: "8"}},
                    }
                ]
            }
        },
    }
    api.put("podtemplates", foreign)
    record = tick(tmp_path, api, gpus_per_node=8, now=T0)
    message = record.error("actuate", POOL)
    assert message is not None and f"PodTemplate {NS}/{TEMPLATE} exists but is not ours" in message
    assert api.objects("capacitybuffers", NS) == []
    (kept,) = api.objects("podtemplates", NS)
    assert kept["metadata"]["labels"] == {"team": "someone"} and template_gpus(api) == "8"


def test_a_pool_whose_nodes_change_gets_its_template_replaced_and_is_charged_the_new_size(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    first = tick(tmp_path, api, gpus_per_node=8, now=T0)
    assert first.errors == () and first.plan.pool(POOL).target_gpus > 0
    (buffer,) = api.objects("capacitybuffers", NS)
    assert template_gpus(api) == "8" and buffer["metadata"]["annotations"][lbl.GPUS] == "8"

    second = tick(tmp_path, api, gpus_per_node=4, now=T0 + 60)  # the pool now has 4-GPU nodes
    assert second.errors == (), second.errors
    (buffer,) = api.objects("capacitybuffers", NS)
    assert template_gpus(api) == "4" and buffer["metadata"]["annotations"][lbl.GPUS] == "4"
    kube = Kube(api_client(host=api.url), dry_run=True)
    held = CapacityBufferBackend.make(kube, NS, "forecaster-placeholder").held_gpus()
    assert held == {POOL: int(buffer["spec"]["replicas"]) * 4}
