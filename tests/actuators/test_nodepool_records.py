"""The NodePool pause and its record, on an in-memory NodePool (``NodePools``).

What a cluster rests on: a pause records the original settings, the applied ones and the
deadline in the same patch; an extension keeps the first original (never the paused values);
it is extended only once less than half the period is left (to the second, odd periods
included); a NodePool changed by someone else, or carrying our budget without our record, is
never written; a record that is damaged in any part, or from a newer format, is refused and
nothing is written. A restore writes back only what still holds our values, only past the
deadline when asked to, and removes exactly our annotation. A 409 is re-read and retried a
bounded number of times.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import ConflictError
from forecaster.actuators.nodepools import (
    CONFLICT_RETRIES,
    KARPENTER_DEFAULT_BUDGETS,
    PROTECT_BUDGET,
    NodePoolConflictError,
    NodePools,
    pause_record,
)
from forecaster.errors import ActuationError
from forecaster.testing.kubeapi.store import merge_patch

T = 1_800_000_000
NAME = "gpu"


class FakeKube:
    def __init__(self, nodepool: dict[str, Any] | None, *, conflicts: int = 0) -> None:
        self.nodepool = nodepool
        self.conflicts = conflicts
        self.patches: list[dict[str, Any]] = []
        self.gets = 0

    def get_nodepool(self, name: str) -> dict[str, Any] | None:
        self.gets += 1
        return copy.deepcopy(self.nodepool)

    def patch_nodepool(self, name: str, patch: dict[str, Any]) -> None:
        assert self.nodepool is not None
        self.patches.append(patch)
        if self.conflicts:
            self.conflicts -= 1
            raise ConflictError("409")
        version = int(self.nodepool["metadata"]["resourceVersion"])
        assert patch["metadata"]["resourceVersion"] == str(version)
        self.nodepool = merge_patch(self.nodepool, patch)
        self.nodepool["metadata"]["resourceVersion"] = str(version + 1)


def nodepool(
    disruption: dict[str, Any] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": NAME, "resourceVersion": "7"}
    if annotations is not None:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {"template": {}}
    if disruption is not None:
        spec["disruption"] = disruption
    return {"metadata": meta, "spec": spec}


def record_of(kube: FakeKube) -> dict[str, Any]:
    assert kube.nodepool is not None
    return json.loads(kube.nodepool["metadata"]["annotations"][lbl.ORIGINAL_DISRUPTION])


def protect(kube: FakeKube, now: int = T, seconds: int = 3600) -> bool:
    return NodePools(kube).protect(NAME, consolidate_after="30m", now=now, seconds=seconds)  # type: ignore[arg-type]


def test_a_pause_records_original_applied_and_deadline_in_the_same_patch() -> None:
    kube = FakeKube(nodepool({"consolidateAfter": "1m", "budgets": [{"nodes": "2"}]}))
    assert protect(kube)
    assert len(kube.patches) == 1 and kube.patches[0]["metadata"]["resourceVersion"] == "7"
    applied = {"consolidateAfter": "30m", "budgets": [{"nodes": "2"}, PROTECT_BUDGET]}
    assert record_of(kube) == {
        "format": lbl.OBJECT_FORMAT,
        "original": {"consolidateAfter": "1m", "budgets": [{"nodes": "2"}]},
        "applied": applied,
        "until": T + 3600,
    }
    assert kube.nodepool is not None and kube.nodepool["spec"]["disruption"] == applied
    assert NodePools(kube).protected_until(NAME) == T + 3600  # type: ignore[arg-type]


def test_a_nodepool_without_budgets_gets_karpenters_default_beside_ours() -> None:
    kube = FakeKube(nodepool())
    assert protect(kube)
    assert record_of(kube)["original"] == {"consolidateAfter": None, "budgets": None}
    assert record_of(kube)["applied"]["budgets"] == [*KARPENTER_DEFAULT_BUDGETS, PROTECT_BUDGET]


def test_a_pause_is_extended_once_less_than_half_its_period_is_left_keeping_the_original() -> None:
    kube = FakeKube(nodepool({"consolidateAfter": "1m"}))
    assert protect(kube, T, seconds=3601)  # half of an odd period: 1800 s, not 1800.5
    assert not protect(kube, T + 3601 - 1800, seconds=3601)  # exactly half left: far enough
    assert len(kube.patches) == 1
    assert protect(kube, T + 3601 - 1799, seconds=3601)
    record = record_of(kube)
    assert record["until"] == T + 3601 - 1799 + 3601
    assert record["original"] == {"consolidateAfter": "1m", "budgets": None}


def test_a_nodepool_changed_while_paused_is_not_written() -> None:
    kube = FakeKube(nodepool({"consolidateAfter": "1m"}))
    assert protect(kube)
    assert kube.nodepool is not None
    kube.nodepool["spec"]["disruption"]["consolidateAfter"] = "5m"  # an operator's edit
    with pytest.raises(NodePoolConflictError, match="changed by someone else"):
        protect(kube, T + 3000)
    assert len(kube.patches) == 1


def test_our_budget_without_our_record_is_never_taken_as_the_original() -> None:
    kube = FakeKube(nodepool({"budgets": [PROTECT_BUDGET]}))
    with pytest.raises(NodePoolConflictError, match="no record of the original"):
        protect(kube)
    assert kube.patches == []


GOOD = {
    "format": 1,
    "original": {"consolidateAfter": None, "budgets": None},
    "applied": {"consolidateAfter": "30m", "budgets": [PROTECT_BUDGET]},
    "until": T,
}


@pytest.mark.parametrize(
    "record",
    [
        "not json",
        json.dumps([GOOD]),
        json.dumps({**GOOD, "until": "soon"}),
        json.dumps({k: v for k, v in GOOD.items() if k != "applied"}),
        json.dumps({**GOOD, "original": "1m"}),
        json.dumps({**GOOD, "applied": {"consolidateAfter": "30m"}}),
        json.dumps({**GOOD, "original": {**GOOD["original"], "extra": 1}}),  # type: ignore[dict-item]
    ],
)
def test_a_damaged_record_is_refused_and_nothing_is_written(record: str) -> None:
    kube = FakeKube(nodepool({}, {lbl.ORIGINAL_DISRUPTION: record}))
    with pytest.raises(NodePoolConflictError, match="damaged"):
        NodePools(kube).restore(NAME)  # type: ignore[arg-type]
    with pytest.raises(NodePoolConflictError, match="damaged"):
        protect(kube)
    assert kube.patches == []


def test_a_record_from_a_newer_format_is_refused_and_one_without_a_format_is_read() -> None:
    newer = nodepool({}, {lbl.ORIGINAL_DISRUPTION: json.dumps({**GOOD, "format": 2})})
    with pytest.raises(NodePoolConflictError, match="format 2"):
        pause_record(newer)  # type: ignore[arg-type]
    unversioned = {k: v for k, v in GOOD.items() if k != "format"}
    old = nodepool({}, {lbl.ORIGINAL_DISRUPTION: json.dumps(unversioned)})
    assert pause_record(old) == unversioned  # type: ignore[arg-type]


def test_no_deadline_without_our_record_or_the_nodepool() -> None:
    assert NodePools(FakeKube(None)).protected_until(NAME) is None  # type: ignore[arg-type]
    assert NodePools(FakeKube(nodepool({}, {"other": "x"}))).protected_until(NAME) is None  # type: ignore[arg-type]
    assert NodePools(FakeKube(nodepool())).protected_until(NAME) is None  # type: ignore[arg-type]


def test_restore_writes_back_the_original_and_removes_only_our_annotation() -> None:
    kube = FakeKube(nodepool({"consolidateAfter": "1m"}, {"team": "ml"}))
    assert protect(kube)
    assert NodePools(kube).restore(NAME)  # type: ignore[arg-type]
    assert kube.nodepool is not None
    assert kube.nodepool["spec"]["disruption"] == {"consolidateAfter": "1m"}
    assert kube.nodepool["metadata"]["annotations"] == {"team": "ml"}
    assert kube.patches[-1]["metadata"]["annotations"] == {lbl.ORIGINAL_DISRUPTION: None}
    assert not NodePools(kube).restore(NAME)  # type: ignore[arg-type]  # nothing of ours left
    assert len(kube.patches) == 2


def test_restore_of_a_nodepool_only_we_annotated_removes_the_annotations() -> None:
    kube = FakeKube(nodepool())
    assert protect(kube)
    assert NodePools(kube).restore(NAME)  # type: ignore[arg-type]
    assert kube.patches[-1]["metadata"]["annotations"] is None
    assert kube.patches[-1]["metadata"]["resourceVersion"] == "8"
    assert kube.nodepool is not None and kube.nodepool["spec"].get("disruption", {}) == {}


def test_restore_leaves_a_field_someone_changed_and_says_so() -> None:
    kube = FakeKube(nodepool({"consolidateAfter": "1m", "budgets": [{"nodes": "2"}]}))
    assert protect(kube)
    assert kube.nodepool is not None
    kube.nodepool["spec"]["disruption"]["budgets"] = [{"nodes": "1"}]
    pools = NodePools(kube)  # type: ignore[arg-type]
    assert pools.restore(NAME)
    assert kube.nodepool["spec"]["disruption"] == {
        "consolidateAfter": "1m",
        "budgets": [{"nodes": "1"}],
    }
    assert pools.conflicts == {
        NAME: f"NodePool {NAME}: budgets changed by someone else while protected;"
        " left as they set it"
    }


def test_an_expiry_restore_waits_for_the_deadline_to_pass() -> None:
    kube = FakeKube(nodepool({"consolidateAfter": "1m"}))
    assert protect(kube)
    pools = NodePools(kube)  # type: ignore[arg-type]
    assert not pools.restore(NAME, expired_before=T + 3600)  # the deadline itself: still held
    assert pools.restore(NAME, expired_before=T + 3601)


def test_a_409_is_re_read_and_retried_a_bounded_number_of_times() -> None:
    kube = FakeKube(nodepool(), conflicts=2)
    assert protect(kube)
    assert len(kube.patches) == 3 and kube.gets == 3
    stuck = FakeKube(nodepool(), conflicts=CONFLICT_RETRIES)
    with pytest.raises(ActuationError, match=f"after {CONFLICT_RETRIES} tries"):
        protect(stuck)
    assert len(stuck.patches) == CONFLICT_RETRIES
    with pytest.raises(ActuationError, match="not found"):
        protect(FakeKube(None))
