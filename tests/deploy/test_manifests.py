"""deploy/: every render (Kustomize overlays, Helm chart) is valid and safe.

Cases: both overlays and three Helm value sets render (tests/deploy/renders.py); every core
object validates (kubernetes-validate, strict) and the ServiceMonitor and PrometheusRule against
the Prometheus Operator v0.93.0 CRDs; ``promtool check rules`` passes on the alert rules;
checkov finds nothing that is not justified in the manifest; the namespace is Pod Security
restricted, NetworkPolicies admit only the scraper to the endpoint and nothing to placeholders,
a PDB and anti-affinity keep a replica up; the bundled in-cluster config validates; containers
(the Helm uninstall hook's too) run as non-root with a read-only root filesystem and no
privilege escalation; the Deployment has at least 2 replicas and probes on /healthz and
/readyz; alert rules use only metrics the daemon exports; forecast-only renders set dry-run and
grant no write on NodePools, PriorityClasses or pods. RBAC against the code: test_rbac.py; Helm
against Kustomize: test_helm.py.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from forecaster.accelerators import GPU, metric_label
from forecaster.durations import parse_duration
from forecaster.service.metrics import Metrics
from forecaster.settings import load_settings
from forecaster.sources.prometheus import (
    DEFAULT_QUERY,
    OUR_NAMESPACES,
    RECORDED_QUERY,
    render_query,
)
from forecaster.testing.kubeapi.schemas import validate
from tests.deploy.renders import (
    FORECAST_ONLY,
    POOL_VALUES,
    RENDERS,
    ROOT,
    by_kind,
    grants,
    helm,
    kubectl,
    render,
)


@pytest.mark.parametrize("name", RENDERS)
def test_renders_and_validates(name: str) -> None:
    objects = RENDERS[name]()
    kinds = {o["kind"] for o in objects}
    assert {
        "ServiceAccount",
        "ClusterRole",
        "Role",
        "PriorityClass",
        "Deployment",
        "CronJob",
        "Service",
        "ServiceMonitor",
        "PrometheusRule",
        "ConfigMap",
    } <= kinds
    for obj in objects:
        if obj["apiVersion"].startswith("monitoring.coreos.com/"):
            assert validate(obj) == [], obj["kind"]  # Prometheus Operator v0.93.0 CRD schema
            continue
        kubernetes_validate.validate(obj, "1.33", strict=True)


def test_alert_rules_pass_promtool(tmp_path: Path) -> None:
    (rule,) = by_kind(render("live"), "PrometheusRule")
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(rule["spec"]))
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: scripts/setup installs Debian's prometheus"
    result = subprocess.run(
        [promtool, "check", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize("name", RENDERS)
def test_checkov_finds_nothing_unjustified(name: str, tmp_path: Path) -> None:
    checkov = ROOT / ".venv-tools" / "bin" / "checkov"
    assert checkov.exists(), "checkov not found: scripts/setup installs it in .venv-tools"
    rendered = tmp_path / f"{name}.yaml"
    rendered.write_text(yaml.safe_dump_all(RENDERS[name]()))
    result = subprocess.run(
        [str(checkov), "-f", str(rendered), "--framework", "kubernetes", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    report = json.loads(result.stdout)
    failed = [f"{f['check_id']} {f['resource']}" for f in report["results"]["failed_checks"]]
    assert failed == [], failed
    for skipped in report["results"]["skipped_checks"]:  # each skip says why, in the manifest
        assert len(skipped["check_result"]["suppress_comment"]) > 20, skipped["check_id"]


def test_bundled_in_cluster_config_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "forecaster.yaml"
    path.write_text((ROOT / "deploy" / "base" / "forecaster.yaml").read_text())
    settings = load_settings(path, env={})
    assert settings.source.kind == "prometheus" and not settings.dry_run


@pytest.mark.parametrize("name", RENDERS)
def test_workloads_are_locked_down(name: str) -> None:
    objects = RENDERS[name]()
    (deployment,) = by_kind(objects, "Deployment")
    cronjobs = by_kind(objects, "CronJob")
    assert deployment["spec"]["replicas"] >= 2
    assert {c["metadata"]["name"] for c in cronjobs} == {
        "forecaster-train",
        "forecaster-expire",
        "forecaster-uninstall",
    }
    for spec in (
        deployment["spec"]["template"]["spec"],
        *(c["spec"]["jobTemplate"]["spec"]["template"]["spec"] for c in cronjobs),
        *(j["spec"]["template"]["spec"] for j in by_kind(objects, "Job")),  # Helm's hook
    ):
        assert spec["securityContext"]["runAsNonRoot"] is True
        for container in spec["containers"]:
            ctx = container["securityContext"]
            assert (
                ctx["readOnlyRootFilesystem"] is True and ctx["allowPrivilegeEscalation"] is False
            )
            assert ctx["capabilities"]["drop"] == ["ALL"]
            assert "memory" in container["resources"]["limits"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_alerts_and_dashboard_use_exported_metrics() -> None:
    exported = {m.name for m in Metrics().registry.collect()}
    (rule,) = by_kind(render("live"), "PrometheusRule")
    exprs = [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]
    dashboard = json.loads((ROOT / "deploy" / "base" / "forecaster-dashboard.json").read_text())
    exprs += [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert exprs
    for expr in exprs:
        for name in re.findall(r"forecaster_[a-z0-9_]+", expr):
            base = re.sub(r"_(total|bucket|count|sum)$", "", name)
            assert base in exported or name in exported, name


@pytest.mark.parametrize("name", FORECAST_ONLY)
def test_forecast_only_cannot_write(name: str) -> None:
    objects = RENDERS[name]()
    env = (
        objects
        and by_kind(objects, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["env"]
    )
    assert {"name": "FORECASTER_DRY_RUN", "value": "true"} in env
    granted = grants(objects, account="forecaster")  # the daemon (expiry/uninstall still undo)
    for group, resource, verb, _ in granted:
        if resource in ("nodepools", "priorityclasses", "pods"):
            assert verb in ("get", "list", "watch"), (group, resource, verb)


def test_retraining_trains_every_configured_pool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (cronjob,) = [
        c for c in by_kind(render("live"), "CronJob") if c["metadata"]["name"] == "forecaster-train"
    ]
    container = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert args[:3] == ["train", "--config", "/etc/forecaster/forecaster.yaml"]
    job = cronjob["spec"]["jobTemplate"]["spec"]
    assert "completionMode" not in job
    # pools stop being started before Kubernetes kills the Job at its deadline
    budget = parse_duration(args[args.index("--time-budget") + 1])
    assert 0 < budget <= job["activeDeadlineSeconds"] - 600

    from forecaster.cli import main

    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "source": {"kind": "csv"},
                "models_dir": str(tmp_path / "models"),
                "pools": [
                    {"name": "a", "csv": "/nonexistent/a.csv"},
                    {"name": "b", "csv": "/nonexistent/b.csv"},
                ],
            }
        )
    )
    main([*args[:1], "--config", str(path), *args[3:]])
    out = capsys.readouterr().out
    assert "pool a: failed" in out and "pool b: failed" in out


def test_no_shared_volume_is_needed() -> None:
    """Models travel through ConfigMaps: the manifests work with a ReadWriteOnce-only cluster."""
    objects = render("live")
    assert by_kind(objects, "PersistentVolumeClaim") == []
    config = yaml.safe_load((ROOT / "deploy" / "base" / "forecaster.yaml").read_text())
    assert config["models_store"] == "configmap"
    for workload in [*by_kind(objects, "Deployment"), *by_kind(objects, "CronJob")]:
        spec = (
            workload["spec"].get("template") or workload["spec"]["jobTemplate"]["spec"]["template"]
        )
        for volume in spec["spec"].get("volumes", []):
            assert "persistentVolumeClaim" not in volume, workload["metadata"]["name"]


@pytest.mark.parametrize("name", ["kustomize-live", "helm-full"])  # with a Namespace object
def test_namespace_network_and_availability_are_locked_down(name: str) -> None:
    objects = RENDERS[name]()
    namespaces = {n["metadata"]["name"]: n for n in by_kind(objects, "Namespace")}
    assert set(namespaces) == {"forecaster", "forecaster-placeholders"}
    for namespace in namespaces.values():
        labels = namespace["metadata"]["labels"]
        for mode in ("enforce", "audit", "warn"):
            assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
    policies = {p["metadata"]["name"]: p for p in by_kind(objects, "NetworkPolicy")}
    placeholders = policies.pop("forecaster-placeholders")
    assert placeholders["metadata"]["namespace"] == "forecaster-placeholders"
    assert placeholders["spec"]["podSelector"] == {}  # every pod there: deny all
    assert placeholders["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert "ingress" not in placeholders["spec"] and "egress" not in placeholders["spec"]
    policies = {name: p["spec"] for name, p in policies.items()}
    endpoint = policies["forecaster-endpoint"]
    assert endpoint["policyTypes"] == ["Ingress"]
    (rule,) = endpoint["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 8080}]
    assert all("namespaceSelector" in peer for peer in rule["from"])
    (deployment,) = by_kind(objects, "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    assert not spec.get("priorityClassName", "").startswith("system-")
    term = spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    (pdb,) = by_kind(objects, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert pdb["spec"]["selector"]["matchLabels"] == selector
    assert term[0]["podAffinityTerm"]["labelSelector"]["matchLabels"] == selector


def test_dockerfile_builds_what_the_manifests_run() -> None:
    """Static checks (no Docker engine on these machines to build it): pinned install, non-root
    user matching the manifests' runAsUser, the files it copies exist, the entrypoint is ours."""
    text = (ROOT / "deploy" / "Dockerfile").read_text()
    assert "-c requirements.lock" in text
    assert "USER 10001:10001" in text
    for line in text.splitlines():
        if line.startswith("COPY ") and "--from" not in line:
            for name in line.split()[1:-1]:
                assert (ROOT / name).exists(), name
    assert 'ENTRYPOINT ["forecaster"]' in text
    assert "ARG BASE=python:3.11-slim" in text and text.count("FROM ${BASE}") == 2
    (deployment,) = by_kind(render("live"), "Deployment")
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == 10001
    assert deployment["spec"]["template"]["spec"]["containers"][0]["args"][:2] == [
        "run",
        "--cluster",
    ]


MIG = "nvidia.com/mig-1g.10gb"


OURS = {"forecaster-gpu-a-0-1": "forecaster-placeholders", "forecaster-gpu-a-0-2": "forecaster"}
"""Our placeholders' namespaces: theirs, and ours where earlier versions held them."""


def test_the_demand_recording_rule_counts_what_the_default_query_counts(tmp_path: Path) -> None:
    """``promtool test rules``: on pods of two NodePools (pending, running, finished, one of
    two containers, a CronJob's run and a JobSet's job, announced: not demand; MIG slices; our
    placeholders in both our namespaces, never demand), the
    recorded series equals the daemon's default query for each pool and resource."""
    (rule,) = by_kind(render("live"), "PrometheusRule")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule["spec"]))
    pods = {  # pod: (nodepool, GPUs per container, phase)
        "a": ("gpu-a", [2], "Running"),
        "b": ("gpu-a", [4], "Pending"),
        "c": ("gpu-a", [8], "Succeeded"),
        "d": ("gpu-b", [1], "Running"),
        "e": ("gpu-a", [1, 1], "Pending"),
        "forecaster-gpu-a-0-1": ("gpu-a", [8], "Running"),  # ours: never demand
        "forecaster-gpu-a-0-2": ("gpu-a", [8], "Running"),  # ours, where earlier versions held it
        "nightly-29433600-x": ("gpu-a", [16], "Running"),  # a CronJob's run: announced
        "train-node-0-0-y": ("gpu-b", [8], "Pending"),  # a JobSet's job: announced
        "batch-z": ("gpu-b", [2], "Running"),  # a Job of no CronJob: demand
        "slices": ("gpu-b", [3], "Running"),  # MIG slices: gpu-b's demand in another unit
    }
    owners = {  # Job: (its owner kind, owner name, its pods)
        "nightly-29433600": ("CronJob", "nightly", ["nightly-29433600-x"]),
        "train-node-0": ("JobSet", "train", ["train-node-0-0-y"]),
        "batch": ("<none>", "<none>", ["batch-z"]),
    }
    series = []
    for pod, (pool, containers, phase) in pods.items():
        namespace = OURS.get(pod, "ml")
        ident = f'namespace="{namespace}",pod="{pod}"'
        for i, gpus in enumerate(containers):
            series.append(
                {
                    "series": f"kube_pod_container_resource_requests{{{ident},container="
                    f'"c{i}",resource="{metric_label(MIG if pod == "slices" else GPU)}"}}',
                    "values": f"{gpus}x15",
                }
            )
        for name in ("Pending", "Running", "Succeeded"):
            series.append(
                {
                    "series": f'kube_pod_status_phase{{{ident},phase="{name}"}}',
                    "values": f"{int(name == phase)}x15",
                }
            )
        series.append(
            {
                "series": "kube_pod_nodeselectors"
                f'{{{ident},nodeselector_karpenter_sh_nodepool="{pool}"}}',
                "values": "1x15",
            }
        )
    for job, (kind, owner, job_pods) in owners.items():
        series.append(
            {
                "series": f'kube_job_owner{{namespace="ml",job_name="{job}",owner_kind="{kind}",'
                f'owner_name="{owner}",owner_is_controller="true"}}',
                "values": "1x15",
            }
        )
        for pod in job_pods:
            series.append(
                {
                    "series": f'kube_pod_owner{{namespace="ml",pod="{pod}",owner_kind="Job",'
                    f'owner_name="{job}",owner_is_controller="true"}}',
                    "values": "1x15",
                }
            )
    expected = {("gpu-a", GPU): 2 + 4 + 2, ("gpu-b", GPU): 1 + 2, ("gpu-b", MIG): 3}
    exprs = []
    for (pool, resource), gpus in expected.items():
        for template in (DEFAULT_QUERY, RECORDED_QUERY):
            exprs.append(
                {
                    "expr": render_query(
                        template, pool, exclude_namespaces=OUR_NAMESPACES, resource=resource
                    ),
                    "eval_time": "10m",
                    "exp_samples": [{"labels": "{}", "value": gpus}],
                }
            )
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": exprs}],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests))
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: scripts/setup installs Debian's prometheus"
    result = subprocess.run(
        [promtool, "test", "rules", "tests.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_is_one_value_in_kustomize_and_helm(tmp_path: Path) -> None:
    """The README's first install: one ``images`` entry (Kustomize) or ``image.repository``
    and ``image.tag`` (Helm) set every container's image."""
    mine = "registry.example.com/forecaster:0.2.0"
    copy = tmp_path / "deploy"
    shutil.copytree(ROOT / "deploy", copy, symlinks=True)
    base = copy / "base" / "kustomization.yaml"
    document = yaml.safe_load(base.read_text())
    document["images"][0].update(newName="registry.example.com/forecaster", newTag="0.2.0")
    base.write_text(yaml.safe_dump(document))
    rendered = subprocess.run(
        [kubectl(), "kustomize", str(copy / "overlays" / "live")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    helm_rendered = subprocess.run(
        [
            helm(),
            "template",
            "forecaster",
            str(ROOT / "deploy" / "helm" / "forecaster"),
            "-f",
            POOL_VALUES,
            "--set",
            "forecastOnly=false",
            "--set",
            "image.repository=registry.example.com/forecaster",
            "--set",
            "image.tag=0.2.0",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for text in (rendered, helm_rendered):
        images = set(re.findall(r"image: (\S+)", text))
        images.discard("registry.k8s.io/pause:3.10")
        assert images == {mine}, images


NAMESPACE_ARGS = [
    "--namespace",
    "forecaster",
    "--placeholders-namespace",
    "forecaster-placeholders",
]


@pytest.mark.parametrize("name", ["kustomize-live", "helm-default"])
def test_the_expiry_and_uninstall_arguments_are_pinned(name: str) -> None:
    """What carries the safety: the expiry Job runs ``--expired`` (never a full uninstall every
    5 minutes) with only the namespace (no config to fail validation); the uninstall hook
    withdraws everything."""
    objects = RENDERS[name]()
    (expire,) = [
        c for c in by_kind(objects, "CronJob") if c["metadata"]["name"] == "forecaster-expire"
    ]
    pod = expire["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"] == ["cleanup", "--expired", *NAMESPACE_ARGS]
    assert "volumes" not in pod and "volumeMounts" not in container
    assert expire["spec"]["concurrencyPolicy"] == "Forbid"
    assert expire["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"] <= 300
    hooks = by_kind(objects, "Job")
    if name.startswith("helm"):
        (hook,) = hooks
        (container,) = hook["spec"]["template"]["spec"]["containers"]
        assert container["args"] == ["cleanup", *NAMESPACE_ARGS]
    else:
        assert hooks == []  # Kustomize: README's uninstall runs `forecaster cleanup` first


@pytest.mark.parametrize("name", ["kustomize-live", "helm-default"])
def test_a_failed_expiry_job_alerts(name: str) -> None:
    (rule,) = by_kind(RENDERS[name](), "PrometheusRule")
    alerts = {r.get("alert"): r for g in rule["spec"]["groups"] for r in g["rules"]}
    expr = alerts["ForecasterExpiryFailed"]["expr"]
    assert 'kube_job_failed{condition="true"}' in expr and 'owner_name="forecaster-expire"' in expr


def test_the_build_context_leaves_out_virtualenvs_history_and_caches() -> None:
    """``docker build .`` from the root would otherwise send ~900 MB of virtualenvs; nothing
    the Dockerfile copies may be left out."""
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    def ignored(path: str) -> bool:
        """Docker's rule: the last pattern that matches decides; ``!`` re-includes."""
        verdict = False
        for pattern in patterns:
            keep = pattern.startswith("!")
            bare = pattern.removeprefix("!").rstrip("/")
            if fnmatch.fnmatch(path, bare) or fnmatch.fnmatch(path, bare + "/*"):
                verdict = not keep
        return verdict

    for path in (
        ".venv",
        ".venv-tools",
        "out/frontier.json",
        ".git",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        "forecaster/__pycache__/x.pyc",
    ):
        assert ignored(path), path
    for line in (ROOT / "deploy" / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY ") and "--from" not in line:
            for name in line.split()[1:-1]:
                assert not ignored(name), name


@pytest.mark.parametrize("name", sorted(RENDERS))
def test_the_shipped_placeholder_priority_class_yields_to_everything(name: str) -> None:
    """Placeholders must lose to any real pod and never push one out: a negative priority,
    ``preemptionPolicy: Never``, and never the cluster's default (every pod would get it)."""
    (priority,) = by_kind(RENDERS[name](), "PriorityClass")
    assert priority["metadata"]["name"] == "forecaster-placeholder"
    assert priority["value"] < 0
    assert priority["preemptionPolicy"] == "Never"
    assert priority.get("globalDefault", False) is False
