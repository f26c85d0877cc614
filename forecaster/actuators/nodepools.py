"""Opt-in NodePool-wide consolidation pause, bounded in time, restored exactly - or not at all.

Off by default: the placeholders' ``karpenter.sh/do-not-disrupt`` already keeps exactly the
warm nodes. When a pool opts in, ``protect`` lengthens ``spec.disruption.consolidateAfter`` and
adds a budget ``{nodes: "0", reasons: [Empty, Underutilized]}``, and records - *in the same
patch* - in the annotation ``forecaster.io/original-disruption``: the original values, the
values we applied, and a deadline. Nothing depends on the daemon being alive to undo it: the
``forecaster cleanup --expired`` CronJob restores every NodePool whose deadline has passed.

``restore`` writes back a field only if it still holds the value we applied; a field someone
changed while we held it (an operator, Argo CD) is left as they set it and reported. A record
that is unreadable, or protection values with no record, are never taken as "the original":
they raise ``NodePoolConflictError`` and nothing is written.

Every patch is a JSON merge patch carrying the ``resourceVersion`` it was computed from: a
concurrent change makes it fail with 409, and we re-read and recompute (a few times).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import ConflictError, Kube
from forecaster.actuators.manifests import NodePool
from forecaster.errors import ActuationError

log = logging.getLogger(__name__)
Patch = dict[str, Any]
"""A JSON merge patch (``null`` deletes a field): partial by nature, so left untyped."""
PROTECT_BUDGET = {"nodes": "0", "reasons": ["Empty", "Underutilized"]}
KARPENTER_DEFAULT_BUDGETS = [{"nodes": "10%"}]
CONFLICT_RETRIES = 5
FIELDS = ("consolidateAfter", "budgets")


class NodePoolConflictError(ActuationError):
    """The NodePool is not in a state we can safely change (see the module docstring)."""


class NodePools:
    """Applies and undoes our disruption settings on NodePools."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.conflicts: dict[str, str] = {}
        """Per NodePool: fields left alone on restore because someone else changed them."""

    def protect(self, name: str, *, consolidate_after: str, now: int, seconds: int) -> bool:
        """Apply protection valid for ``seconds`` from ``now``; True if a patch was sent.

        An existing protection is re-patched only to extend a deadline that is less than half
        of ``seconds`` away, so a steady pool costs a write per half period, not per tick.
        """
        return self._retrying(
            name, lambda np: _protect_patch(np, consolidate_after, now=now, seconds=seconds)
        )

    def restore(self, name: str, *, expired_before: int | None = None) -> bool:
        """Undo protection if we applied it (only if its deadline < ``expired_before`` when set).

        True if a patch was sent.
        """
        return self._retrying(name, lambda np: self._restore_patch(np, expired_before))

    def protected_until(self, name: str) -> int | None:
        """The deadline of our protection on the NodePool, or None."""
        nodepool = self.kube.get_nodepool(name)
        if nodepool is None or lbl.ORIGINAL_DISRUPTION not in _annotations(nodepool):
            return None
        return int(pause_record(nodepool)["until"])

    def _retrying(self, name: str, make_patch: Callable[[NodePool], Patch | None]) -> bool:
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

    def _restore_patch(self, nodepool: NodePool, expired_before: int | None) -> Patch | None:
        annotations = _annotations(nodepool)
        if lbl.ORIGINAL_DISRUPTION not in annotations:
            return None
        record = pause_record(nodepool)
        if expired_before is not None and int(record["until"]) >= expired_before:
            return None
        disruption = nodepool["spec"].get("disruption", {})
        name = nodepool["metadata"]["name"]
        spec: Patch = {}
        changed_by_others = []
        for key in FIELDS:
            if disruption.get(key) == record["applied"][key]:
                spec[key] = record["original"][key]  # None removes a key that was absent
            else:
                changed_by_others.append(key)
        if changed_by_others:
            message = (
                f"NodePool {name}: {', '.join(changed_by_others)} changed by someone else while"
                " protected; left as they set it"
            )
            log.warning("%s", message)
            self.conflicts[name] = message
        only_ours = set(annotations) == {lbl.ORIGINAL_DISRUPTION}
        patch: Patch = {
            "metadata": {
                "resourceVersion": nodepool["metadata"]["resourceVersion"],
                "annotations": None if only_ours else {lbl.ORIGINAL_DISRUPTION: None},
            }
        }
        if spec:
            patch["spec"] = {"disruption": spec}
        return patch


def _annotations(nodepool: NodePool) -> dict[str, str]:
    return dict(nodepool["metadata"].get("annotations") or {})


def pause_record(nodepool: NodePool) -> dict[str, Any]:
    """Our record on the NodePool; a damaged one raises ``NodePoolConflictError``, never guessed."""
    name = nodepool["metadata"]["name"]
    text = _annotations(nodepool)[lbl.ORIGINAL_DISRUPTION]
    try:
        record = json.loads(text)
        valid = (
            isinstance(record, dict)
            and isinstance(record.get("until"), int)
            and all(
                isinstance(record.get(part), dict) and set(record[part]) == set(FIELDS)
                for part in ("original", "applied")
            )
        )
    except ValueError:
        valid = False
    if not valid:
        raise NodePoolConflictError(
            f"NodePool {name}: annotation {lbl.ORIGINAL_DISRUPTION} is damaged; not touching"
            " the NodePool (restore its disruption settings by hand, then remove the annotation)"
        )
    if int(record.get("format", 1)) > lbl.OBJECT_FORMAT:
        raise NodePoolConflictError(
            f"NodePool {name}: our record is in format {record['format']}, written by a newer"
            f" forecaster (this one reads up to {lbl.OBJECT_FORMAT}); not touching the NodePool:"
            " run the newer version's cleanup, or restore by hand"
        )
    return dict(record)


def _protect_patch(
    nodepool: NodePool, consolidate_after: str, *, now: int, seconds: int
) -> Patch | None:
    disruption = nodepool["spec"].get("disruption", {})
    name = nodepool["metadata"]["name"]
    if lbl.ORIGINAL_DISRUPTION in _annotations(nodepool):
        record = pause_record(nodepool)
        current = {key: disruption.get(key) for key in FIELDS}
        if current != record["applied"]:
            raise NodePoolConflictError(
                f"NodePool {name}: changed by someone else while protected; not re-applying"
            )
        if int(record["until"]) - now >= seconds // 2:
            return None  # protected, deadline far enough away
        original = record["original"]
    else:
        if PROTECT_BUDGET in (disruption.get("budgets") or []):
            raise NodePoolConflictError(
                f"NodePool {name}: carries our protection budget but no record of the original;"
                " not taking it as the original (restore it by hand)"
            )
        original = {key: disruption.get(key) for key in FIELDS}
    applied = {
        "consolidateAfter": consolidate_after,
        "budgets": [*(original["budgets"] or KARPENTER_DEFAULT_BUDGETS), PROTECT_BUDGET],
    }
    record = {
        "format": lbl.OBJECT_FORMAT,
        "original": original,
        "applied": applied,
        "until": now + seconds,
    }
    return {
        "metadata": {
            "resourceVersion": nodepool["metadata"]["resourceVersion"],
            "annotations": {lbl.ORIGINAL_DISRUPTION: json.dumps(record, sort_keys=True)},
        },
        "spec": {"disruption": applied},
    }
