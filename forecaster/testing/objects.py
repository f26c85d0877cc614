"""Objects another team writes, as the tests and benches build them: a GPU CronJob, and a pod
dressed as a real cluster serves it."""

from __future__ import annotations

import copy
from typing import Any

GPU = "nvidia.com/gpu"


def dressed(pod: dict[str, Any], *, index: int = 0) -> dict[str, Any]:
    """``pod`` as a real cluster serves it: managedFields, an environment, volumes, probes and
    container statuses (what the pod watch's ``slim`` drops) around the fields we read."""
    pod = copy.deepcopy(pod)
    pod["metadata"]["managedFields"] = [
        {
            "manager": manager,
            "operation": "Update",
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:containers": {f'k:{{"name":"c{i}"}}': {}}}},
        }
        for i, manager in enumerate(("kube-controller-manager", "kubelet", "kube-scheduler"))
    ]
    for container in pod["spec"]["containers"]:
        container["env"] = [{"name": f"VAR_{i}", "value": f"value-{index}-{i}"} for i in range(20)]
        container["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        container["readinessProbe"] = {"httpGet": {"path": "/ready", "port": 8080}}
        container["command"] = ["python", "-m", "train", "--epochs", "90"]
    pod["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    pod.setdefault("status", {})["containerStatuses"] = [
        {
            "name": c["name"],
            "image": c["image"],
            "imageID": f"sha256:{index:064x}",
            "ready": False,
            "restartCount": 0,
        }
        for c in pod["spec"]["containers"]
    ]
    return pod


def cronjob(
    name: str = "nightly", *, pool: str, schedule: str = "5 * * * *", **spec: Any
) -> dict[str, Any]:
    """A GPU CronJob (batch/v1) for ``pool``: 2 pods x 8 GPUs, last run at 2027-01-15 07:05
    UTC (``spec``: more of its spec; ``job_spec``: of its Job's; ``status`` replaces it)."""
    job_spec = spec.pop("job_spec", {})
    status = spec.pop("status", {"lastScheduleTime": "2027-01-15T07:05:00Z"})
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "schedule": schedule,
            **spec,
            "jobTemplate": {
                "spec": {
                    "parallelism": 2,
                    "completions": 2,
                    **job_spec,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "nodeSelector": {"karpenter.sh/nodepool": pool},
                            "tolerations": [
                                {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
                            ],
                            "containers": [
                                {
                                    "name": "train",
                                    "image": "ml/train:1",
                                    "resources": {"requests": {GPU: "8"}, "limits": {GPU: "8"}},
                                }
                            ],
                        }
                    },
                }
            },
        },
        "status": status,
    }
