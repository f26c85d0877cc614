"""Validation of every object the test double accepts, against the real schemas.

Core objects: ``kubernetes-validate`` (strict: unknown fields fail). Karpenter objects: the CRD
``openAPIV3Schema`` from the shared Karpenter release (jsonschema Draft 7), plus the CEL rules
that matter for what we write, re-checked in code because jsonschema cannot run CEL.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml
from kubernetes_validate import utils
from referencing import Registry, Resource

CRDS = Path(__file__).resolve().parent / "crds"
"""Verbatim copies of Karpenter v1.14.1's CRDs (see crds/PROVENANCE.md); a test checks they
still match the team's ``shared/schemas`` when that folder is present."""
KUBERNETES_VERSION = "1.33"
CRD_FILES = {
    ("karpenter.sh/v1", "NodePool"): "karpenter.sh_nodepools.yaml",
    ("autoscaling.x-k8s.io/v1beta1", "CapacityBuffer"): "autoscaling.x-k8s.io_capacitybuffers.yaml",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "monitoring.coreos.com_servicemonitors.yaml",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "monitoring.coreos.com_prometheusrules.yaml",
    ("kueue.x-k8s.io/v1beta2", "ClusterQueue"): "kueue.x-k8s.io_clusterqueues.yaml",
    ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"): "kueue.x-k8s.io_resourceflavors.yaml",
    ("kueue.x-k8s.io/v1beta2", "Workload"): "kueue.x-k8s.io_workloads.yaml",
    ("kueue.x-k8s.io/v1beta2", "LocalQueue"): "kueue.x-k8s.io_localqueues.yaml",
    ("scheduling.volcano.sh/v1beta1", "PodGroup"): "scheduling.volcano.sh_podgroups.yaml",
    ("scheduling.volcano.sh/v1beta1", "Queue"): "scheduling.volcano.sh_queues.yaml",
    ("kueue.x-k8s.io/v1beta1", "ClusterQueue"): "kueue.x-k8s.io_clusterqueues.yaml",
    ("kueue.x-k8s.io/v1beta1", "ResourceFlavor"): "kueue.x-k8s.io_resourceflavors.yaml",
    ("kueue.x-k8s.io/v1beta1", "Workload"): "kueue.x-k8s.io_workloads.yaml",
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): "jobset.x-k8s.io_jobsets.yaml",
    ("argoproj.io/v1alpha1", "Workflow"): "argoproj.io_workflows.yaml",
    ("argoproj.io/v1alpha1", "CronWorkflow"): "argoproj.io_cronworkflows.yaml",
}


@functools.cache
def crd_validator(api_version: str, kind: str) -> jsonschema.Draft7Validator:
    crd = yaml.safe_load((CRDS / CRD_FILES[(api_version, kind)]).read_text())
    version = api_version.split("/")[1]
    for served in crd["spec"]["versions"]:
        if served["name"] == version:
            return jsonschema.Draft7Validator(served["schema"]["openAPIV3Schema"])
    raise KeyError(f"{api_version} {kind} not in CRD")


CONFIG_MAP_BYTES = 1024 * 1024
"""A ConfigMap's data and binaryData together (the API server's validation)."""
OBJECT_BYTES = 3 * 512 * 1024
"""etcd's default request limit (1.5 MiB): a larger object is refused whatever its kind."""
LABEL_LIMIT = 63
NAME_LIMITS = {"Job": 63, "CronJob": 52, "Service": 63}
"""Names that become label values or DNS labels; every other name: 253 (a DNS subdomain)."""


def limits(obj: dict[str, Any]) -> list[str]:
    """The API server's size and length limits, which no schema states."""
    errors = []
    if len(json.dumps(obj).encode()) > OBJECT_BYTES:
        errors.append(f"object is larger than {OBJECT_BYTES} bytes")
    if obj.get("kind") == "ConfigMap":
        size = sum(
            len(str(v).encode())
            for part in ("data", "binaryData")
            for v in (obj.get(part) or {}).values()
        )
        if size > CONFIG_MAP_BYTES:
            errors.append(f"data: Too long: must have at most {CONFIG_MAP_BYTES} bytes")
    metadata = obj.get("metadata") or {}
    name = str(metadata.get("name") or "")
    limit = NAME_LIMITS.get(str(obj.get("kind")), 253)
    if len(name) > limit:
        errors.append(f"metadata.name: must be no more than {limit} characters")
    for key, value in (metadata.get("labels") or {}).items():
        if len(key.rpartition("/")[2]) > LABEL_LIMIT or len(str(value)) > LABEL_LIMIT:
            errors.append(f"metadata.labels: {key}: must be no more than {LABEL_LIMIT} characters")
    return errors


def validate(obj: dict[str, Any]) -> list[str]:
    """Problems with ``obj`` (empty list when valid)."""
    too_big = limits(obj)
    if too_big:
        return too_big
    key = (obj.get("apiVersion", ""), obj.get("kind", ""))
    if key in CRD_FILES:
        errors = [
            f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}"
            for e in crd_validator(*key).iter_errors(obj)
        ]
        return errors + _cel_rules(obj)
    try:
        core_validator(*key).validate(obj)
    except jsonschema.ValidationError as exc:
        return [str(exc).splitlines()[0]]
    return _event_rules(obj)


@functools.cache
def core_validator(api_version: str, kind: str) -> jsonschema.Draft202012Validator:
    """``kubernetes-validate``'s strict schema of the kind, as its ``validate`` chooses and
    reads it, built once: the library re-reads and re-parses its JSON (the definitions are
    megabytes) at every call - about 10 ms an object, most of what filling the double with a
    large cluster (``bench.performance.scale``) and much of the suite cost."""
    wanted = utils.major_minor(KUBERNETES_VERSION)
    version = [v for v in utils.all_versions() if utils.major_minor(v) <= wanted][-1]
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    folder = f"kubernetes-json-schema/v{version}-local-strict"
    try:
        schema = utils.schema_contents(f"{folder}/{kind.lower()}-{group}.json", wanted)
    except FileNotFoundError:
        raise kubernetes_validate.SchemaNotFoundError(
            version=wanted, kind=kind, api_version=api_version
        ) from None
    definitions = utils.schema_contents(f"{folder}/_definitions.json", wanted)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _event_rules(obj: dict[str, Any]) -> list[str]:
    """The API server's own check of a core/v1 Event with no ``eventTime`` (legacyValidateEvent
    in pkg/apis/core/validation/events.go): its involvedObject's namespace must be its own
    (empty only for an Event in ``default``)."""
    if (obj.get("apiVersion"), obj.get("kind")) != ("v1", "Event") or obj.get("eventTime"):
        return []
    namespace = (obj.get("metadata") or {}).get("namespace", "")
    involved = (obj.get("involvedObject") or {}).get("namespace", "")
    if involved == namespace or (not involved and namespace == "default"):
        return []
    return [
        f"involvedObject.namespace: Invalid value: {involved!r}: does not match event.namespace"
    ]


def _cel_rules(obj: dict[str, Any]) -> list[str]:
    spec = obj.get("spec", {})
    errors = []
    if obj["kind"] == "NodePool":
        for budget in spec.get("disruption", {}).get("budgets", []):
            if ("schedule" in budget) != ("duration" in budget):
                errors.append("spec.disruption.budgets: 'schedule' must be set with 'duration'")
    if obj["kind"] == "CapacityBuffer":
        if "podTemplateRef" in spec and not ("replicas" in spec or "limits" in spec):
            errors.append("spec: If podTemplateRef is set, replicas or limits must also be set")
        if ("podTemplateRef" in spec) == ("scalableRef" in spec):
            errors.append("spec: exactly one of podTemplateRef, scalableRef")
    return errors
