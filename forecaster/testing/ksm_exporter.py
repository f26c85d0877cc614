"""A kube-state-metrics stand-in over the API double, for a real Prometheus to scrape.

It exports what kube-state-metrics documents (``tests/fixtures/kube-state-metrics/*.md``) for the
objects the double holds, with the same names, labels and types - nothing more:

* ``kube_pod_created``, ``kube_pod_start_time`` (once the pod has ``status.startTime``),
  ``kube_pod_owner``, ``kube_pod_status_phase`` (one series per phase, 1 for the pod's),
  ``kube_pod_container_resource_requests`` (``nvidia.com/gpu`` as ``nvidia_com_gpu``, unit
  ``integer``; ``node`` once bound), ``kube_pod_labels`` and ``kube_node_labels``;
* ``kube_pod_nodeselectors`` only when opted in (``opt_in``), as ``--metric-opt-in-list`` does:
  it is EXPERIMENTAL and off by default;
* labels of pods and nodes only for allow-listed keys (``labels_allowlist``, as
  ``--metric-labels-allowlist`` does; none by default, so ``kube_*_labels`` carry no
  ``label_*``).

A deleted pod stops being exported, as kube-state-metrics' informer forgets it. Every series
carries ``uid``; Prometheus adds ``job`` and ``instance`` at scrape.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from forecaster.actuators.quantities import timestamp_seconds
from forecaster.testing.kubeapi.server import KubeApiDouble

PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
OPT_IN = frozenset({"kube_pod_nodeselectors"})
"""The opt-in metrics this stand-in knows (``--metric-opt-in-list``)."""

FAMILIES = {
    "kube_pod_created": "gauge",
    "kube_pod_start_time": "gauge",
    "kube_pod_owner": "gauge",
    "kube_pod_status_phase": "gauge",
    "kube_pod_container_resource_requests": "gauge",
    "kube_pod_labels": "gauge",
    "kube_pod_nodeselectors": "gauge",
    "kube_node_labels": "gauge",
}
"""Every family exported, with its documented type (``test_ksm_exporter`` checks the docs)."""

Sample = tuple[str, dict[str, str], float]


def sanitize(name: str) -> str:
    """kube-state-metrics' label and resource name rule: anything not [a-zA-Z0-9_] is '_'."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def _unit(resource: str) -> str:
    return {"cpu": "core", "memory": "byte"}.get(resource, "integer")


def _number(value: object) -> float | None:
    """Plain numbers and CPU millicores; anything else (memory suffixes) is left out."""
    text = str(value)
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    if re.fullmatch(r"\d+m", text):
        return int(text[:-1]) / 1000
    return None


class KsmExporter:
    """Serves ``/metrics`` computed from the double's store at each scrape."""

    def __init__(
        self,
        api: KubeApiDouble,
        *,
        opt_in: Iterable[str] = (),
        labels_allowlist: Iterable[str] = (),
    ) -> None:
        unknown = set(opt_in) - OPT_IN
        if unknown:
            raise ValueError(f"not an opt-in metric here: {sorted(unknown)}")
        self.api = api
        self.opt_in = frozenset(opt_in)
        self.allowlist = tuple(labels_allowlist)
        self.scrapes = 0

    # ---- what is exported -------------------------------------------------------------------
    def samples(self) -> list[Sample]:
        with self.api.store.lock:
            pods = self.api.store.list("pods", None)
            nodes = self.api.store.list("nodes", None)
        out: list[Sample] = []
        for pod in pods:
            out.extend(self._pod(pod))
        for node in nodes:
            labels = node["metadata"].get("labels") or {}
            out.append(
                (
                    "kube_node_labels",
                    {"node": node["metadata"]["name"], **self._allowed(labels)},
                    1.0,
                )
            )
        return out

    def _allowed(self, labels: dict[str, str]) -> dict[str, str]:
        return {f"label_{sanitize(k)}": v for k, v in labels.items() if k in self.allowlist}

    def _pod(self, pod: dict[str, Any]) -> Iterator[Sample]:
        meta, spec, status = pod["metadata"], pod["spec"], pod.get("status") or {}
        ident = {"namespace": meta["namespace"], "pod": meta["name"], "uid": meta.get("uid", "")}
        yield "kube_pod_created", ident, timestamp_seconds(meta["creationTimestamp"])
        if status.get("startTime"):
            yield "kube_pod_start_time", ident, timestamp_seconds(status["startTime"])
        owners = meta.get("ownerReferences") or [{}]
        for owner in owners:
            yield (
                "kube_pod_owner",
                {
                    **ident,
                    "owner_kind": owner.get("kind", "<none>"),
                    "owner_name": owner.get("name", "<none>"),
                    "owner_is_controller": str(owner.get("controller", "<none>")).lower()
                    if owner
                    else "<none>",
                },
                1.0,
            )
        phase = status.get("phase", "Pending")
        for each in PHASES:
            yield "kube_pod_status_phase", {**ident, "phase": each}, float(each == phase)
        node = spec.get("nodeName") or ""
        for container in spec.get("containers") or []:
            for resource, value in (
                (container.get("resources") or {}).get("requests") or {}
            ).items():
                number = _number(value)
                if number is None:
                    continue
                labels = {
                    **ident,
                    "container": container["name"],
                    "node": node,
                    "resource": sanitize(resource),
                    "unit": _unit(resource),
                }
                yield "kube_pod_container_resource_requests", labels, number
        yield "kube_pod_labels", {**ident, **self._allowed(meta.get("labels") or {})}, 1.0
        if "kube_pod_nodeselectors" in self.opt_in:
            selectors = {
                f"nodeselector_{sanitize(k)}": v
                for k, v in (spec.get("nodeSelector") or {}).items()
            }
            yield "kube_pod_nodeselectors", {**ident, **selectors}, 1.0

    def text(self) -> str:
        """The exposition text format: one ``# TYPE`` per family, empty labels left out."""
        by_family: dict[str, list[str]] = {}
        for name, labels, value in self.samples():
            text = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()) if v != "")
            by_family.setdefault(name, []).append(f"{name}{{{text}}} {value!r}")
        lines = []
        for name, rows in by_family.items():
            lines.append(f"# TYPE {name} {FAMILIES[name]}")
            lines.extend(rows)
        return "\n".join(lines) + "\n"

    # ---- serving ----------------------------------------------------------------------------
    @contextmanager
    def serving(self) -> Iterator[str]:
        """Serve ``/metrics`` on a free loopback port; yield ``host:port``."""
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = exporter.text().encode()
                exporter.scrapes += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
