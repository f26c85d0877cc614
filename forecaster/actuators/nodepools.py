"""Keep warm nodes from being consolidated away, and put the NodePool back exactly as it was.

``protect`` records the original ``spec.disruption.consolidateAfter`` and ``budgets`` in the
annotation ``forecaster.io/original-disruption`` *in the same patch* that changes them, so a
restarted daemon (or ``forecaster cleanup``) can always restore them. While protected:
``consolidateAfter`` is lengthened and a budget ``{nodes: "0", reasons: [Empty, Underutilized]}``
is added (the original budgets stay; Karpenter's default 10 % budget is kept explicit when the
original had none). ``restore`` writes the recorded values back (``null`` removes keys that were
absent) and drops the annotation, leaving the object as it was before.

Every patch is a JSON merge patch carrying the ``resourceVersion`` it was computed from: a
concurrent change makes it fail with 409, and we re-read and recompute (a few times).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import ConflictError, Kube
from forecaster.errors import ActuationError

log = logging.getLogger(__name__)
Obj = dict[str, Any]
PROTECT_BUDGET = {"nodes": "0", "reasons": ["Empty", "Underutilized"]}
KARPENTER_DEFAULT_BUDGETS = [{"nodes": "10%"}]
CONFLICT_RETRIES = 5


class NodePools:
    """Applies and undoes our disruption settings on NodePools."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def protect(self, name: str, *, consolidate_after: str) -> bool:
        """Apply protection; True if a patch was sent."""
        return self._retrying(name, lambda np: _protect_patch(np, consolidate_after))

    def restore(self, name: str) -> bool:
        """Undo protection if we applied it; True if a patch was sent."""
        return self._retrying(name, _restore_patch)

    def is_protected(self, name: str) -> bool:
        """Does the NodePool carry our record of originals?"""
        nodepool = self.kube.get_nodepool(name)
        return nodepool is not None and lbl.ORIGINAL_DISRUPTION in _annotations(nodepool)

    def _retrying(self, name: str, make_patch: Any) -> bool:
        for _ in range(CONFLICT_RETRIES):
            nodepool = self.kube.get_nodepool(name)
            if nodepool is None:
                raise ActuationError(f"NodePool {name} not found")
            patch = make_patch(nodepool)
            if patch is None:
                return False
            try:
                self.kube.patch_nodepool(name, patch)
            except ConflictError:
                log.info("NodePool %s changed while we patched it: re-reading", name)
                continue
            return True
        raise ActuationError(f"NodePool {name}: still conflicting after {CONFLICT_RETRIES} tries")


def _annotations(nodepool: Obj) -> dict[str, str]:
    return dict(nodepool["metadata"].get("annotations") or {})


def _protect_patch(nodepool: Obj, consolidate_after: str) -> Obj | None:
    disruption = nodepool["spec"].get("disruption", {})
    recorded = _annotations(nodepool).get(lbl.ORIGINAL_DISRUPTION)
    original = (
        json.loads(recorded)
        if recorded
        else {
            "consolidateAfter": disruption.get("consolidateAfter"),
            "budgets": disruption.get("budgets"),
        }
    )
    budgets = [*(original["budgets"] or KARPENTER_DEFAULT_BUDGETS), PROTECT_BUDGET]
    if (
        recorded
        and disruption.get("consolidateAfter") == consolidate_after
        and disruption.get("budgets") == budgets
    ):
        return None  # already protected as wanted
    return {
        "metadata": {
            "resourceVersion": nodepool["metadata"]["resourceVersion"],
            "annotations": {lbl.ORIGINAL_DISRUPTION: json.dumps(original, sort_keys=True)},
        },
        "spec": {"disruption": {"consolidateAfter": consolidate_after, "budgets": budgets}},
    }


def _restore_patch(nodepool: Obj) -> Obj | None:
    annotations = _annotations(nodepool)
    if lbl.ORIGINAL_DISRUPTION not in annotations:
        return None
    original = json.loads(annotations[lbl.ORIGINAL_DISRUPTION])
    only_ours = set(annotations) == {lbl.ORIGINAL_DISRUPTION}
    return {
        "metadata": {
            "resourceVersion": nodepool["metadata"]["resourceVersion"],
            "annotations": None if only_ours else {lbl.ORIGINAL_DISRUPTION: None},
        },
        "spec": {
            "disruption": {
                "consolidateAfter": original.get("consolidateAfter"),
                "budgets": original.get("budgets"),
            }
        },
    }
