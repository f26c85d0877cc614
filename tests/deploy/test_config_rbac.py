"""The daemon's grants that follow its config: NodePools by name, notice reads by source.

* Both renders grant NodePool ``get``/``patch`` on exactly the configured pools (the restore and
  cleanup accounts keep the grant without names they need for pools that left the config).
* Each notice kind's read is granted only when its source is enabled: for every choice the chart
  offers (each source alone, none, every one) the grants are exactly the kinds the enabled
  sources' modules declare, and the daemon, ticking on the API double with every notice API
  served and an object of each kind, is refused nothing it reads.
* Kustomize's ``deploy/base/config-rbac.yaml`` is what ``forecaster rbac`` writes from
  ``deploy/base/forecaster.yaml``, and the chart's rules file what ``scripts/config_rbac.py``
  writes.
* A pool missing from the grant gets its own 403 (its error names the grant; the other pool
  plans and prewarms) and ``doctor`` names it with the fix.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.notice.registry import SOURCES
from forecaster.app import build
from forecaster.cli import main
from forecaster.cli.rbac import config_rbac
from forecaster.settings import Settings
from forecaster.testing.fakes import T0, LiveSource, calm_history, settings
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.objects import cronjob
from tests.deploy.renders import LIVE, POOL_VALUES, RENDERS, ROOT, render_helm
from tests.deploy.test_helm import config_settings
from tests.deploy.test_rbac import allows, bound, used
from tests.factories import argo_workflow, jobset, podgroup

sys.path.insert(0, str(ROOT / "scripts"))
import config_rbac as rbac_script

POOL = "gpu-a100"
NOTICE_RESOURCES = {
    (kind.group, f"{kind.plural}/{kind.subresource}" if kind.subresource else kind.plural)
    for _, source in SOURCES.items()
    for kind in source.kinds
}
"""Every (apiGroup, resource) a notice source reads."""


def render_config(objects: list[dict[str, Any]], tmp_path: Path) -> Settings:
    (config_map,) = [
        o
        for o in objects
        if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("forecaster-config")
    ]
    return config_settings(config_map, tmp_path, "helm")


@pytest.mark.parametrize("name", sorted(RENDERS))
def test_the_daemons_nodepool_grant_names_the_configured_pools(name: str, tmp_path: Path) -> None:
    objects = RENDERS[name]()
    pools = {p.name for p in render_config(objects, tmp_path).pools}
    rules = [r for r in bound(objects, "forecaster") if r[1] == "nodepools"]
    named = {r for r in rules if r[2] in ("get", "patch")}
    assert named and all(r[4] == frozenset(pools) for r in named)
    assert {r[2] for r in rules if r[4] is None} == {"list"}  # list cannot be limited by name
    for account in ("forecaster-expire", "forecaster-cleanup"):  # pools that left the config
        restore = [r for r in bound(objects, account) if r[1] == "nodepools"]
        assert restore and all(r[4] is None for r in restore)


def test_the_generated_files_are_current() -> None:
    assert rbac_script.main(["--check"]) == 0


def test_forecaster_rbac_prints_what_kustomize_applies(capsys: pytest.CaptureFixture[str]) -> None:
    config = str(ROOT / "deploy" / "base" / "forecaster.yaml")
    assert main(["rbac", "--config", config]) == 0
    printed = capsys.readouterr().out
    assert printed == (ROOT / "deploy" / "base" / "config-rbac.yaml").read_text()


CHOICES = [[name] for name in SOURCES.names()] + [[], list(SOURCES.names())]


def notice_requests(api: KubeApiDouble, config: Settings, tmp_path: Path) -> set[tuple[str, ...]]:
    """The notice reads of one daemon tick (every notice API served, one object of each)."""
    kube = Kube(api_client(host=api.url), dry_run=True, backoff_seconds=0.01)
    live = config.model_copy(update={"models_dir": tmp_path / "models", "dry_run": True})
    began = len(api.requests)
    loop = build.build_reconciler(
        live, source=LiveSource(T0 - 2 * 86400, calm_history()), kube=kube
    )
    loop.tick(T0)
    reads = used(api.requests[began:])
    return {u for u in reads if (u[0], u[1]) in NOTICE_RESOURCES and u[3] == "cluster"}


@pytest.mark.parametrize("sources", CHOICES, ids=lambda s: "+".join(s) or "none")
def test_notice_grants_follow_notice_sources(
    sources: list[str], tmp_path: Path, kueue_cluster: KubeApiDouble
) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"extraConfig": {"notice": {"sources": sources}}}))
    objects = render_helm(values=(POOL_VALUES, str(values)), sets=(LIVE,))
    config = render_config(objects, tmp_path)
    assert list(config.notice.sources) == sources
    need = notice_requests(kueue_cluster, config, tmp_path)
    rules = {
        r
        for r in bound(objects, "forecaster")
        if (r[0], r[1]) in NOTICE_RESOURCES and r[3] == "cluster"
    }  # (the placeholders' namespace: our own Jobs)
    assert {u for u in need if not any(allows(r, u) for r in rules)} == set()
    declared = {  # what the enabled sources' modules say they read, and nothing else
        (kind.group, f"{kind.plural}/{kind.subresource}", "get", "cluster", None)
        if kind.subresource
        else (kind.group, kind.plural, "list", "cluster", None)
        for name in sources
        for kind in SOURCES.get(name).kinds
    }
    assert rules == declared
    # (context kinds are read only when their source has an object: test_rbac.py's whole
    # repertoire checks, with every source on, that each grant is used)


@pytest.fixture
def kueue_cluster() -> Any:
    """Every notice API served, one announcing object of each kind, one pool."""
    with KubeApiDouble(kueue=True, jobsets=True, kueue_visibility=True, volcano=True) as api:
        sim = ClusterSim(api)
        sim.add_nodepool(POOL, limit_gpus=200)
        sim.add_node(POOL)
        api.put("jobsets", jobset(pool=POOL))
        api.put("cronjobs", cronjob(pool=POOL))
        api.put("workflows", argo_workflow("wf", pool=POOL, namespace="ml"))
        api.put("podgroups", podgroup("gang", pool=POOL, namespace="ml"))
        yield api


def test_a_pool_missing_from_the_grant_gets_its_own_403_and_doctor_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    granted = settings(tmp_path)  # one pool, gpu-a: what the grant was rendered from
    pools = [
        granted.pools[0].model_dump(mode="json"),
        {**granted.pools[0].model_dump(mode="json"), "name": "gpu-new"},
    ]
    config = settings(tmp_path, pools=pools)
    old, new = (p.name for p in config.pools)
    with KubeApiDouble() as api:
        sim = ClusterSim(api)
        sim.busy_pool(old)
        sim.add_nodepool(new, limit_gpus=200)
        sim.add_node(new)
        role = next(r for r in config_rbac(granted) if r["metadata"]["name"].endswith("nodepools"))
        api.put("clusterroles", role)
        for method in ("GET", "PATCH"):  # what RBAC answers the daemon for an unnamed NodePool
            api.faults.add(method, f"/nodepools/{new}$", status=403, times=10_000)
        kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
        loop = build.build_reconciler(
            config, source=LiveSource(T0 - 2 * 86400, calm_history()), kube=kube
        )
        record = loop.tick(T0)
        problem = record.error("cluster", new) or ""
        assert "HTTP 403" in problem
        assert f"ClusterRole forecaster-nodepools does not name NodePool {new}" in problem
        assert record.error("cluster", old) is None
        assert record.plan.pool(old).target_gpus > 0  # the granted pool plans and prewarms
        path = tmp_path / "forecaster.yaml"
        path.write_text(yaml.safe_dump(config.model_dump(mode="json")))
        code = main(["doctor", "--config", str(path), "--kube-host", api.url])
    out = capsys.readouterr().out
    assert code == 1
    assert (
        f"ERROR nodepool-grant [{new}]: ClusterRole forecaster-nodepools does not name NodePool"
        f" {new}" in out
    )
    assert "forecaster rbac --config" in out and "`pools`" in out
    assert f"nodepool-grant [{old}]" not in out
