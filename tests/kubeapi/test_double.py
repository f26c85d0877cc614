"""The API server double's own semantics, so tests built on it can be trusted.

Cases: label selector forms; field selectors; RFC 7386 merge patch; resourceVersion conflicts;
AlreadyExists; schema validation refuses a bad NodePool with 422; unknown PriorityClass refused
at pod admission; injected delays make the client time out (and the actuator's Kube says so);
watches apply the selectors to each write and expire compacted versions (410).
"""

from __future__ import annotations

import pytest

from forecaster.actuators.kube import Kube, api_client
from forecaster.errors import ActuationError, WatchExpiredError
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.kubeapi.store import ApiError, matches_fields, matches_labels, merge_patch

LABELS = {"app": "train", "tier": "gpu"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=train", True),
        ("app==train", True),
        ("app!=train", False),
        ("app=serve", False),
        ("app in (train,serve)", True),
        ("app notin (train)", False),
        ("tier", True),
        ("!tier", False),
        ("!missing", True),
        ("app=train,tier=gpu", True),
        ("app=train,tier=cpu", False),
        ("", True),
    ],
)
def test_label_selectors(selector: str, expected: bool) -> None:
    assert matches_labels(LABELS, selector) is expected


def test_field_selectors() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {"nodeName": "n1"},
        "status": {"phase": "Running"},
    }
    assert matches_fields(pod, "status.phase!=Succeeded,status.phase!=Failed")
    assert not matches_fields(pod, "status.phase=Pending")
    assert matches_fields(pod, "spec.nodeName=n1,metadata.namespace=ml")
    with pytest.raises(ApiError, match="field label not supported"):
        matches_fields(pod, "spec.bogus=1")


def test_merge_patch_is_rfc_7386() -> None:
    target = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert merge_patch(target, {"a": {"b": None, "c": [3]}, "e": {"f": None}}) == {
        "a": {"c": [3]},
        "d": 1,
        "e": {},
    }
    assert target == {"a": {"b": 1, "c": [1, 2]}, "d": 1}


def test_conflicts_validation_and_admission() -> None:
    with KubeApiDouble() as api:
        sim = ClusterSim(api)
        pool = sim.add_nodepool("gpu-a", limit_gpus=8)
        code, body = api.handle(
            "PATCH",
            "/apis/karpenter.sh/v1/nodepools/gpu-a",
            "application/merge-patch+json",
            {"metadata": {"resourceVersion": "1"}, "spec": {}},
        )
        assert (code, body["reason"]) == (409, "Conflict")
        code, body = api.handle("POST", "/apis/karpenter.sh/v1/nodepools", "application/json", pool)
        assert (code, body["reason"]) == (409, "AlreadyExists")
        code, body = api.handle(
            "PATCH",
            "/apis/karpenter.sh/v1/nodepools/gpu-a",
            "application/merge-patch+json",
            {"spec": {"disruption": {"consolidateAfter": "soon"}}},
        )
        assert code == 422 and "consolidateAfter" in body["message"]
        assert api.invalid and api.invalid[-1][0] == "nodepools"
        api.invalid.clear()
        with pytest.raises(ApiError, match="no PriorityClass with name nope"):
            sim.submit("x", "gpu-a", 1, priority_class="nope")


def test_injected_delay_times_the_client_out() -> None:
    with KubeApiDouble() as api:
        api.faults.add("GET", r"/nodepools/", status=0, delay_seconds=1.5, times=3)
        kube = Kube(
            api_client(host=api.url, timeout_seconds=0.3),
            dry_run=False,
            retries=1,
            backoff_seconds=0.01,
            request_timeout_seconds=0.3,
        )
        with pytest.raises(ActuationError, match="get nodepool gpu-a: API server unreachable"):
            kube.get_nodepool("gpu-a")
        assert sum(r.path.endswith("/gpu-a") for r in api.requests) == 2  # first try + one retry


def test_vendored_crds_match_the_shared_release() -> None:
    """The double validates against copies; they must be the release the team pinned."""
    import hashlib
    from pathlib import Path

    from forecaster.testing.kubeapi.schemas import CRDS

    pinned = {  # SHA-256 from shared/schemas/README.md (Karpenter v1.14.1)
        "karpenter.sh_nodepools.yaml": (
            "3bb64a20c80776b77aa19a699ebdaf34480a7b2e7ec4ef890b43225b3517f878"
        ),
        "karpenter.k8s.aws_ec2nodeclasses.yaml": (
            "62dec59f01c0972d4503ca3ed25f243ba9c2f561be0d964ce7a14c8df406132f"
        ),
        "autoscaling.x-k8s.io_capacitybuffers.yaml": (
            "66fd5680b902b38fb9657ad2b432196a06c42b37d078e53be2e39909200a6342"
        ),
        # Prometheus Operator v0.93.0
        "monitoring.coreos.com_servicemonitors.yaml": (
            "a99047972c9dd7679ce2050b9968e8a08773492e671b3e17abd476d42aa78a32"
        ),
        "monitoring.coreos.com_prometheusrules.yaml": (
            "78be98554b9c8506ab2b4f4feb91c5f3a56e536a0a510f3a8e876a459970d56d"
        ),
        # Kueue v0.19.2
        "kueue.x-k8s.io_clusterqueues.yaml": (
            "e0a5fc9b370c70f3d993d4f599865817338ecf94187b30b15b12ff33c579bd55"
        ),
        "kueue.x-k8s.io_resourceflavors.yaml": (
            "19e339c47e9ca3fa2c9eeddd27715a512f765c4794ed859733408a9715720173"
        ),
        "kueue.x-k8s.io_workloads.yaml": (
            "1970ff6fcc5dc1a29e3f290ed736032c5d4509c94efe2c642d64a244ad1b8aa5"
        ),
        "kueue.x-k8s.io_localqueues.yaml": (
            "dd10ef8d3578e7212fa52763549e7b6be0949793a5b924495fcd293330109fed"
        ),
        # JobSet at 08dfbdf (v0.13.0-devel)
        "jobset.x-k8s.io_jobsets.yaml": (
            "029f74bbb91b7d94423a74b294def840c10c6cdab9ee7371f8b4f3ef5b3a445a"
        ),
        # Argo Workflows at f016ad8 (after v4.1.0-rc2)
        "argoproj.io_workflows.yaml": (
            "35ffc0d16c9c71db69ae113e562d90057eac75a60e7371aa3012a3171ccd8c39"
        ),
        "argoproj.io_cronworkflows.yaml": (
            "31abde1c89c6c11cf1c97753676327e02b2f8dc47827e49383732ac6b1d828c6"
        ),
        # Volcano at ed72c7c (after v1.16.0-alpha.1)
        "scheduling.volcano.sh_podgroups.yaml": (
            "d9077185bab4c34ec5d6ab5b12272898238d72b532e633fbbc7c06de3ee42478"
        ),
        "scheduling.volcano.sh_queues.yaml": (
            "86d5e50008a693c707ba4db919ed534b5aa5980889a275bfec24b1386e724cde"
        ),
    }
    shared_dirs = {
        "monitoring": "prometheus-operator-v0.93.0",
        "kueue": "kueue",
        "jobset": "jobset",
        "argoproj": "argo-workflows",
        "scheduling": "volcano",
    }
    for name, digest in pinned.items():
        assert hashlib.sha256((CRDS / name).read_bytes()).hexdigest() == digest
        folder = shared_dirs.get(name.split(".")[0], "")
        shared = Path(__file__).resolve().parents[3] / "shared" / "schemas" / folder / name
        if shared.exists():
            assert shared.read_bytes() == (CRDS / name).read_bytes()


def test_watch_applies_selectors_to_each_write_and_expires_compacted_versions() -> None:
    """As the real watch cache: a pod leaving the field selector is DELETED, one entering it
    ADDED; a resume from a compacted version ends with an ERROR event carrying 410."""
    with KubeApiDouble() as api:
        sim = ClusterSim(api)
        sim.add_nodepool("pool", limit_gpus=64)
        kube = Kube(api_client(host=api.url), dry_run=False)
        _, version = kube.list_pods_versioned(fields="status.phase!=Succeeded")
        sim.submit("a", "pool", 8)
        pod = api.store.get(("pods", "ml", "a"))
        pod["status"] = {"phase": "Succeeded"}
        api.store.replace(("pods", "ml", "a"), pod)
        pod["status"] = {"phase": "Running"}
        del pod["metadata"]["resourceVersion"]
        api.store.replace(("pods", "ml", "a"), pod)
        events = [
            (e["type"], e["object"]["metadata"]["name"])
            for e in kube.watch_pods(
                resource_version=version, fields="status.phase!=Succeeded", timeout_seconds=1
            )
        ]
        assert events == [("ADDED", "a"), ("DELETED", "a"), ("ADDED", "a")]
        api.store.compact()
        with pytest.raises(WatchExpiredError, match="too old resource version"):
            list(kube.watch_pods(resource_version=version, timeout_seconds=1))


@pytest.mark.parametrize(
    ("obj", "says"),
    [
        (
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "big", "namespace": "forecaster"},
                "data": {"state.json": "x" * (1024 * 1024 + 1)},
            },
            "must have at most 1048576 bytes",
        ),
        (
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "j" * 64, "namespace": "forecaster"},
                "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}},
            },
            "no more than 63 characters",
        ),
        (
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "c", "namespace": "forecaster", "labels": {"p": "v" * 64}},
            },
            "no more than 63 characters",
        ),
    ],
)
def test_the_api_servers_size_and_length_limits(obj: dict[str, object], says: str) -> None:
    """An object over 1 MiB of data, a Job name or a label value over 63 characters: 422."""
    with KubeApiDouble() as api, pytest.raises(ApiError, match=says):
        api.put("configmaps" if obj["kind"] == "ConfigMap" else "jobs", obj)
