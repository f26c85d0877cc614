"""Upgrading an install of the previous chart moves the placeholders without orphans.

The previous chart (``tests/fixtures/chart-previous/``, rendered from the commit before
placeholders had a namespace of their own) ran its daemon with ``planning.placeholders.namespace``
its release namespace: that daemon's placeholder Job, CapacityBuffer and PodTemplate, and a bare
pod from before placeholders were Jobs, are put there on the API double as it wrote them. The
upgrade's steps, as Helm and the cluster run them: the new daemon (the current chart's config)
takes over and holds its placeholders in their own namespace; the new chart's expiry CronJob runs
(its arguments as rendered) and withdraws everything the old daemon left - the buffer zeroed,
then deleted by the next run once the autoscaler has let it go - with only what the new chart
grants its account. Then nothing of ours is left beside our accounts.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.prewarm.capacitybuffers import CapacityBuffers
from forecaster.actuators.prewarm.placeholders import Placeholders, PlaceholderSpec
from forecaster.app.build import build_cluster_service
from forecaster.cli import main
from forecaster.service.clock import FakeClock
from forecaster.settings import Settings
from forecaster.testing.fakes import T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.deploy.renders import LIVE, POOL_VALUES, by_kind, render_helm
from tests.deploy.test_helm import config_settings
from tests.deploy.test_rbac import allows, bare_placeholder, bound, install, used

PREVIOUS = Path(__file__).parents[1] / "fixtures" / "chart-previous" / "helm-live.yaml"
POOL = "gpu-a100"
OURS = ("jobs", "pods", "capacitybuffers", "podtemplates")


def chart_config(objects: list[dict[str, Any]], tmp_path: Path, side: str) -> Settings:
    (config_map,) = [
        o for o in by_kind(objects, "ConfigMap") if o["metadata"]["name"] == "forecaster-config"
    ]
    (tmp_path / side).mkdir()
    return config_settings(config_map, tmp_path / side, "helm")


def expiry_args(objects: list[dict[str, Any]]) -> list[str]:
    (cronjob,) = [
        o for o in by_kind(objects, "CronJob") if o["metadata"]["name"] == "forecaster-expire"
    ]
    (container,) = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


def old_daemon_held(kube: Kube, namespace: str) -> None:
    """What the previous chart's daemon held when it was replaced, where it held it."""
    spec = PlaceholderSpec(pool=POOL, gpus=8)
    buffers = CapacityBuffers(kube, namespace=namespace, priority_class="forecaster-placeholder")
    buffers.apply(spec, replicas=1, now=T0)
    Placeholders(kube, namespace=namespace, priority_class="forecaster-placeholder").apply(
        spec, target=1, now=T0
    )


def test_an_upgrade_from_the_previous_chart_leaves_no_orphan(tmp_path: Path) -> None:
    previous = [d for d in yaml.safe_load_all(PREVIOUS.read_text()) if d]
    current = render_helm(values=(POOL_VALUES,), sets=(LIVE,))
    (old_config,) = [
        yaml.safe_load(o["data"]["forecaster.yaml"])
        for o in by_kind(previous, "ConfigMap")
        if o["metadata"]["name"] == "forecaster-config"
    ]
    after = chart_config(current, tmp_path, "current")
    home = after.namespace
    assert old_config["planning"]["placeholders"]["namespace"] == home  # where it held them
    # this version refuses that config with one line naming the field
    with pytest.raises(ValidationError, match=r"planning\.placeholders\.namespace is forecaster"):
        Settings.model_validate({**old_config, "source": {"kind": "prometheus"}})
    moved_to = after.planning.placeholders.namespace
    assert moved_to != home
    with KubeApiDouble(capacity_buffers=True) as api:
        sim = ClusterSim(api, priority_class=True, buffer_controller=True)
        sim.add_nodepool(POOL, limit_gpus=200)
        sim.add_node(POOL)
        writer = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
        old_daemon_held(writer, home)
        bare_placeholder(api)
        sim.step()
        assert all(api.objects(kind, home) for kind in OURS)
        install(api, current)  # helm upgrade: the new chart's state, Lease and kill switch
        clock = FakeClock(datetime.fromtimestamp(T0 + 60, tz=UTC))
        live = after.model_copy(update={"models_dir": tmp_path / "models"})
        service = build_cluster_service(live, writer, identity="replica-new", clock=clock)
        service.daemon.reconciler.source = LiveSource(T0 - 2 * 86400, calm_history())
        service.renew()
        service.reconcile()
        service.stop()
        assert api.objects("jobs", moved_to) or api.objects("capacitybuffers", moved_to)
        began = len(api.requests)
        assert main([*expiry_args(current), "--kube-host", api.url]) == 0
        sim.step()  # the autoscaler lets the zeroed buffer go; five minutes on, expiry runs again
        assert main([*expiry_args(current), "--kube-host", api.url]) == 0
        expiry = used(api.requests[began:])
        left = {kind: [o["metadata"]["name"] for o in api.objects(kind, home)] for kind in OURS}
        assert left == {kind: [] for kind in OURS}
        held = api.objects("jobs", moved_to) + api.objects("capacitybuffers", moved_to)
        assert held, "the new daemon's prewarm is untouched"
    rules = bound(current, "forecaster-expire")
    refused = {u for u in expiry if not any(allows(r, u) for r in rules)}
    assert refused == set()  # the new chart grants the expiry account what the move needs
