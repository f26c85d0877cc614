"""The Helm chart (deploy/helm/forecaster) with the real helm binary, offline.

Cases: ``helm lint`` passes for the default and the full values file; values that break the
chart's schema are refused with the field named; the chart renders exactly the Kustomize
objects for the same settings (live and forecast-only: the only differences allowed are Helm's
bookkeeping labels, the config checksum that replaces Kustomize's name hash, checkov comments
and the uninstall hook), the config both ship loads into the same Settings; the uninstall hook
is a pre-delete Job whose command, run as written against the API double, removes what the
daemon created; forecast-only renders no hook (it could not write anyway). Validity, hardening
and checkov of every Helm render: test_manifests.py; its RBAC against the code: test_rbac.py.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from forecaster.actuators.kube import Kube, api_client
from forecaster.app.build import build_cluster_service
from forecaster.cli import main
from forecaster.service.clock import FakeClock
from forecaster.settings import Settings, load_settings
from forecaster.testing.fakes import T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.deploy.renders import (
    CHART,
    FULL_VALUES,
    LIVE,
    POOL_VALUES,
    Objects,
    by_kind,
    helm,
    render,
    render_helm,
)

HELM_LABELS = (
    "helm.sh/chart",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
)
GENERATED = ("forecaster-config", "forecaster-dashboard")  # Kustomize adds a content hash


def helm_cmd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([helm(), *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(
    "values", [("-f", POOL_VALUES), ("-f", FULL_VALUES)], ids=["one-pool", "full"]
)
def test_helm_lint_passes(values: tuple[str, ...]) -> None:
    result = helm_cmd("lint", str(CHART), "--strict", *values)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ("budgets.max_total_gpus=3", "/budgets"),  # a typo of max_total_prewarm_gpus
        ("image.digest=latest", "/image/digest"),
        ("actuation=buffers", "/actuation"),
        ("pools[0].name=GPU_A100", "/pools/0/name"),
        ("pools[0].max_prewarm_gpu=3", "/pools/0"),  # a typo the daemon would crash-loop on
        ("pools[0].gpus_per_node=129", "/pools/0/gpus_per_node"),
        ("pools[0].backend=buffers", "/pools/0/backend"),
        ("budgets.max_cost_per_hour=-1", "/budgets/max_cost_per_hour"),
    ],
)
def test_bad_values_are_refused_with_the_field_named(item: str, field: str) -> None:
    result = helm_cmd("template", "forecaster", str(CHART), "-f", POOL_VALUES, "--set", item)
    assert result.returncode != 0
    assert f"at '{field}'" in result.stderr, result.stderr


def config_settings(config_map: dict[str, Any], tmp_path: Path, name: str) -> Settings:
    path = tmp_path / f"{name}.yaml"
    path.write_text(config_map["data"]["forecaster.yaml"])
    return load_settings(path, env={})


def normalized(objects: Objects, tmp_path: Path, side: str) -> dict[tuple[str, str, str], Any]:
    """Objects by (kind, name, namespace) without what legitimately differs between the two
    tools."""
    out: dict[tuple[str, str, str], Any] = {}
    for original in objects:
        obj = copy.deepcopy(original)
        meta = obj["metadata"]
        for key in HELM_LABELS:  # (the PriorityClass's managed-by: forecaster in Kustomize, too)
            meta.get("labels", {}).pop(key, None)
        for holder in (meta, obj.get("spec", {}).get("template", {}).get("metadata", {})):
            annotations = holder.get("annotations", {})
            for key in [k for k in annotations if k.startswith(("checkov.io/", "checksum/"))]:
                annotations.pop(key)
            if "annotations" in holder and not annotations:
                holder.pop("annotations")
        text = json.dumps(obj, sort_keys=True)
        for name in GENERATED:  # forecaster-config-7g9k2m5h8t -> forecaster-config
            text = re.sub(rf'"{name}-[a-z0-9]{{10}}"', f'"{name}"', text)
        obj = json.loads(text)
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == "forecaster-config":
            settings = config_settings(obj, tmp_path, side)
            obj["data"] = settings.model_dump(mode="json")
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == "forecaster-dashboard":
            obj["data"] = {k: json.loads(v) for k, v in obj["data"].items()}
        out[(obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace", ""))] = obj
    return out


@pytest.mark.parametrize(
    ("overlay", "sets"),
    [
        ("live", ("namespace.create=true", LIVE)),
        ("forecast-only", ("namespace.create=true",)),
    ],
)
def test_chart_and_kustomize_render_the_same_objects(
    overlay: str, sets: tuple[str, ...], tmp_path: Path
) -> None:
    kustomize = normalized(render(overlay), tmp_path, "kustomize")
    chart = normalized(render_helm(values=(POOL_VALUES,), sets=sets), tmp_path, "helm")
    hooks = {
        key
        for key, obj in chart.items()
        if "helm.sh/hook" in obj["metadata"].get("annotations", {})
    }
    hook = ("Job", "forecaster-uninstall-cleanup", "forecaster")
    assert hooks == ({hook} if overlay == "live" else set())
    for key in hooks:
        chart.pop(key)
    assert sorted(chart) == sorted(kustomize)
    for key, obj in kustomize.items():
        assert chart[key] == obj, key


def test_the_uninstall_hook_cleans_up_what_the_daemon_created(tmp_path: Path) -> None:
    objects = render_helm(values=(POOL_VALUES,), sets=(LIVE,))
    (hook,) = by_kind(objects, "Job")
    assert hook["metadata"]["annotations"]["helm.sh/hook"] == "pre-delete"
    (config_map,) = [
        o for o in by_kind(objects, "ConfigMap") if o["metadata"]["name"] == "forecaster-config"
    ]
    settings = config_settings(config_map, tmp_path, "helm")
    pod = hook["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert "volumes" not in pod  # no config: one that does not validate cannot stop it
    assert hook["spec"]["activeDeadlineSeconds"] <= 600  # a stuck cleanup cannot hang uninstall

    with KubeApiDouble() as api:
        sim = ClusterSim(api, priority_class=True)
        sim.add_nodepool("gpu-a100", limit_gpus=200)
        sim.add_node("gpu-a100")
        clock = FakeClock(datetime.fromtimestamp(T0, tz=UTC))
        kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
        live = settings.model_copy(update={"models_dir": tmp_path / "models"})
        service = build_cluster_service(live, kube, identity="replica-a", clock=clock)
        service.daemon.reconciler.source = LiveSource(T0 - 2 * 86400, calm_history())
        service.renew()
        service.reconcile()
        assert api.objects("jobs", "forecaster-placeholders"), "the daemon prewarmed"
        service.stop()  # (a running leader is fenced: test_cluster_service.py)
        args = container["args"]
        assert args[0] == "cleanup" and "--expired" not in args
        assert main([*args, "--kube-host", api.url]) == 0
        assert api.objects("jobs", "forecaster-placeholders") == []


def test_forecast_only_renders_no_uninstall_hook() -> None:
    assert by_kind(render_helm(values=(POOL_VALUES,)), "Job") == []


@pytest.mark.parametrize("command", ["template", "lint"])
def test_no_pools_is_refused_naming_pools(command: str) -> None:
    """No example pool is ever deployed: the chart needs the operator's pools."""
    args = ["template", "forecaster"] if command == "template" else ["lint", "--strict"]
    result = helm_cmd(*args, str(CHART))
    assert result.returncode != 0
    assert "pools" in result.stdout + result.stderr


def test_the_default_render_is_forecast_only() -> None:
    """Prewarming is an explicit choice: given only its pools, the chart writes nothing."""
    objects = render_helm(values=(POOL_VALUES,))
    (deployment,) = by_kind(objects, "Deployment")
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "FORECASTER_DRY_RUN", "value": "true"} in env
    assert by_kind(objects, "Job") == []  # no uninstall hook: nothing to undo


def test_the_values_schema_follows_the_config_schema() -> None:
    """``pools`` and ``budgets`` in values.schema.json are generated from the config's pydantic
    models (scripts/values_schema.py): the two cannot drift."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "values_schema.py"
    result = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
