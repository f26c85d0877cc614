"""Labels and annotations forecaster puts on what it creates or changes.

We only ever delete objects carrying ``MANAGED_BY`` and only restore NodePool fields recorded in
``ORIGINAL_DISRUPTION`` - nothing else in the cluster is ours to touch.
"""

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "forecaster"
FIELD_MANAGER = "forecaster"  # managedFields manager of everything we write
POOL = "forecaster.io/pool"
SLOT = "forecaster.io/slot"
ROLE = "forecaster.io/role"
PLACEHOLDER = "placeholder"
GPUS = "forecaster.io/gpus"
CREATED_AT = "forecaster.io/created-at"
EXPIRES_AT = "forecaster.io/expires-at"
ORIGINAL_DISRUPTION = "forecaster.io/original-disruption"
FORMAT = "forecaster.io/format"
TEMPLATE_HASH = "forecaster.io/template-hash"
"""On a PodTemplate of ours: a digest of the pod template we wrote (the API server adds defaults
to what it stores, so the stored spec is never compared as such)."""
OBJECT_FORMAT = 1
"""The format of what we write (annotation ``FORMAT`` on our objects, ``"format"`` in the NodePool
record; the state has its own ``format_version``). Absent means 1 (0.1.0 wrote none). A newer
daemon reads every older format; an older one refuses a NodePool record from a newer one."""
NODEPOOL_LABEL = "karpenter.sh/nodepool"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
JOB_NAME = "batch.kubernetes.io/job-name"


def owned_selector() -> str:
    """Label selector of everything we created."""
    return f"{MANAGED_BY}={MANAGER}"


def placeholder_selector(pool: str | None = None) -> str:
    """Label selector of our placeholders (of one pool, or all)."""
    selector = f"{MANAGED_BY}={MANAGER},{ROLE}={PLACEHOLDER}"
    return f"{selector},{POOL}={pool}" if pool else selector
