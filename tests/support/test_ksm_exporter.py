"""The kube-state-metrics stand-in exports only what kube-state-metrics documents.

Read from ``tests/fixtures/kube-state-metrics/{pod,node}-metrics.md``: each family it emits is
listed there with the same type, each label it sets is one of the documented labels (``label_*`` and
``nodeselector_*`` stand for the documented pattern labels), an opt-in metric appears only when
opted in, and no ``label_*`` without an allow-list.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from forecaster.testing.ksm_exporter import FAMILIES, KsmExporter
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble

DOCS = Path(__file__).resolve().parents[1] / "fixtures" / "kube-state-metrics"
"""kube-state-metrics' own metric reference, verbatim (its README says from which commit)."""


def documented() -> dict[str, tuple[str, set[str], str]]:
    """Metric name -> (type, label names, opt-in column) from the docs' tables."""
    out = {}
    for page in ("pod-metrics.md", "node-metrics.md"):
        for line in (DOCS / page).read_text().splitlines():
            cells = [c.strip() for c in line.replace("\\|", "/").strip().strip("|").split("|")]
            if len(cells) < 5 or not cells[0].startswith("kube_"):
                continue
            labels = set(re.findall(r"`([a-zA-Z_]+)`=", " ".join(cells[2:])))
            out[cells[0]] = (cells[1].lower(), labels, "Opt-in" if "Opt-in" in cells else "-")
    return out


@pytest.fixture
def exporter(api: KubeApiDouble) -> KsmExporter:
    cluster = ClusterSim(api)
    cluster.add_nodepool("gpu-a", limit_gpus=64)
    cluster.add_node("gpu-a")
    cluster.submit("train-1", "gpu-a", 8)
    cluster.submit("train-2", "gpu-a", 8)
    cluster.step()
    return KsmExporter(api)


def label_pattern(label: str) -> str:
    for prefix, pattern in (
        ("label_", "label_POD_LABEL"),
        ("nodeselector_", "nodeselector_NODE_SELECTOR"),
    ):
        if label.startswith(prefix):
            return pattern
    return label


def test_every_family_label_and_type_is_documented(exporter: KsmExporter) -> None:
    docs = documented()
    exporter.opt_in = frozenset({"kube_pod_nodeselectors"})
    exporter.allowlist = ("app", "karpenter.sh/nodepool")
    seen = set()
    for name, labels, _ in exporter.samples():
        seen.add(name)
        kind, allowed, _ = docs[name]
        assert FAMILIES[name] == kind, name
        shown = {label_pattern(k) for k in labels}
        if name == "kube_node_labels":
            shown = {"label_NODE_LABEL" if k == "label_POD_LABEL" else k for k in shown}
        assert shown <= allowed, (name, shown - allowed)
    assert seen == set(FAMILIES)
    assert docs["kube_pod_nodeselectors"][2] == "Opt-in"


def test_defaults_hold_no_opt_in_metric_and_no_labels(exporter: KsmExporter) -> None:
    samples = exporter.samples()
    assert "kube_pod_nodeselectors" not in {name for name, _, _ in samples}
    assert not any(k.startswith("label_") for _, labels, _ in samples for k in labels)
    text = exporter.text()
    assert "# TYPE kube_pod_status_phase gauge" in text
    assert 'resource="nvidia_com_gpu"' in text and 'unit="integer"' in text
