"""Upgrades: this daemon reads what forecaster 0.1.0 left in a cluster, and refuses what a newer
version wrote rather than misreading it.

``tests/fixtures/format-0.1/`` holds the objects 0.1.0 wrote (dumped from its daemon on the API
double): a placeholder Job, a CapacityBuffer and its PodTemplate, a NodePool under our
consolidation pause (its record has no ``format``), the state ConfigMap (``format_version`` 2).
Cases: the daemon picks up that state (pending forecasts, spend ledger) and holds its
placeholders in their own namespace, while the expiry CronJob withdraws the one 0.1.0 left in
forecaster's namespace; ``cleanup`` removes the old placeholders and
buffer and restores the NodePool from the old record; a NodePool record from a newer format is
left untouched and reported; what we write now carries the format.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build, cleanup
from forecaster.core.budget import spent_last_day
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history, settings
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import HOME, NS

FIXTURES = Path(__file__).parents[1] / "fixtures" / "format-0.1"
RECORD = "forecaster.io/original-disruption"


def _load(api: KubeApiDouble, backend: str) -> dict[str, list[dict[str, Any]]]:
    objects: dict[str, list[dict[str, Any]]] = json.loads(
        (FIXTURES / f"{backend}.json").read_text()
    )
    for resource, items in objects.items():
        for obj in items:
            if resource == "nodepools":
                api.store.objects.pop(("nodepools", "", obj["metadata"]["name"]), None)
            api.put(resource, copy.deepcopy(obj))
    return objects


def _config(tmp_path: Path, backend: str):  # type: ignore[no-untyped-def]
    planning = settings(tmp_path).planning.model_dump(mode="json")
    return settings(
        tmp_path, planning={**planning, "protect_nodepools": True, "actuation": backend}
    )


@pytest.fixture
def cluster() -> Any:
    with KubeApiDouble(capacity_buffers=True) as api:
        api.clock = float(T0 + 60)
        ClusterSim(api, buffer_controller=True).busy_pool(POOL)
        yield api
    assert api.invalid == []


def test_the_daemon_continues_from_what_0_1_left(tmp_path: Path, cluster: KubeApiDouble) -> None:
    _load(cluster, "placeholders")
    kube = Kube(api_client(host=cluster.url), dry_run=False, backoff_seconds=0.01)
    loop = build.build_reconciler(
        _config(tmp_path, "placeholders"),
        source=LiveSource(T0 - 2 * 86400, calm_history()),
        kube=kube,
    )
    record = loop.tick(T0 + 120)
    assert record.error("state") is None
    assert spent_last_day(loop.state.ledger) > 0  # 0.1.0's spend still counts against the cap
    assert any(p.origin == T0 - 60 for p in loop.state.pool(POOL).pending)
    jobs = cluster.objects("jobs", NS)  # held in the placeholders' own namespace now
    assert len(jobs) == record.plan.pool(POOL).placeholders
    (old,) = cluster.objects("jobs", HOME)  # 0.1's, beside our accounts: no daemon renews it
    assert old["metadata"]["name"] == f"forecaster-{POOL}-0-{T0}"
    expired = cleanup.expire(kube, namespace=HOME, placeholders=NS, now=T0 + 180)
    assert expired.changed == [f"deleted placeholder {old['metadata']['name']}"]
    assert cluster.objects("jobs", HOME) == [] and len(cluster.objects("jobs", NS)) == len(jobs)


@pytest.mark.parametrize("backend", ["placeholders", "capacitybuffer"])
def test_cleanup_undoes_what_0_1_left(tmp_path: Path, cluster: KubeApiDouble, backend: str) -> None:
    objects = _load(cluster, backend)
    (nodepool,) = objects["nodepools"]
    original = json.loads(nodepool["metadata"]["annotations"][RECORD])["original"]
    kube = Kube(api_client(host=cluster.url), dry_run=False, backoff_seconds=0.01)
    changed = cleanup.cleanup(
        kube, namespace=HOME, placeholders=NS, wall=lambda: float(T0 + 120), sleep=lambda s: None
    ).changed
    assert any("restored" in line for line in changed), changed
    assert cluster.objects("jobs", NS) == []
    restored = cluster.objects("nodepools")[0]
    assert RECORD not in (restored["metadata"].get("annotations") or {})
    assert restored["spec"]["disruption"]["consolidateAfter"] == original["consolidateAfter"]
    for buffer in cluster.objects("capacitybuffers", NS):
        assert buffer["spec"]["replicas"] == 0


def test_a_record_from_a_newer_format_is_left_alone(tmp_path: Path, cluster: KubeApiDouble) -> None:
    objects = _load(cluster, "placeholders")
    (nodepool,) = objects["nodepools"]
    record = json.loads(nodepool["metadata"]["annotations"][RECORD])
    record["format"] = 99
    nodepool["metadata"]["annotations"][RECORD] = json.dumps(record)
    cluster.store.objects.pop(("nodepools", "", POOL), None)
    cluster.put("nodepools", copy.deepcopy(nodepool))
    kube = Kube(api_client(host=cluster.url), dry_run=False, backoff_seconds=0.01)
    loop = build.build_reconciler(
        _config(tmp_path, "placeholders"),
        source=LiveSource(T0 - 2 * 86400, calm_history()),
        kube=kube,
    )
    record_after = loop.tick(T0 + 120)
    assert "newer forecaster" in (record_after.error("cluster", POOL) or "")
    assert cluster.objects("nodepools")[0]["spec"] == nodepool["spec"]  # untouched


def test_what_we_write_now_carries_the_format(tmp_path: Path, cluster: KubeApiDouble) -> None:
    kube = Kube(api_client(host=cluster.url), dry_run=False, backoff_seconds=0.01)
    loop = build.build_reconciler(
        _config(tmp_path, "placeholders"),
        source=LiveSource(T0 - 2 * 86400, calm_history()),
        kube=kube,
    )
    loop.tick(T0 + 120)
    (job, *_) = cluster.objects("jobs", NS)
    assert job["metadata"]["annotations"]["forecaster.io/format"] == "1"
    pool = cluster.objects("nodepools")[0]
    assert json.loads(pool["metadata"]["annotations"][RECORD])["format"] == 1
