"""Our CapacityBuffers through their life, on an in-memory Kubernetes (``CapacityBuffers``).

What money rests on: a buffer is renewed when less than half its TTL is left (not before: a write
every tick would be noise; not after: it would lapse), and whenever its replicas or limits
change; one is expired at its deadline to the second, and only while it still asks for replicas;
a deadline that cannot be read is already past; it is deleted only once drained (spec and
status at zero), with its PodTemplate, and a PodTemplate left alone is removed too; zeroing
writes only when there is something to zero. Each call says whether it wrote.
"""

from __future__ import annotations

import copy
from typing import Any

from forecaster.accelerators import GPU
from forecaster.actuators import labels as lbl
from forecaster.actuators.prewarm.capacitybuffers import CapacityBuffers, _expires_at, buffer_name
from forecaster.actuators.prewarm.placeholders import PlaceholderSpec

NS = "forecaster"
NOW = 1_800_000_000
SPEC = PlaceholderSpec(pool="gpu", gpus=8, ttl_seconds=3601)  # odd: half is 1800.5
NAME = buffer_name("gpu")


class FakeKube:
    """The calls ``CapacityBuffers`` makes, on dicts; a patch is a merge patch."""

    def __init__(self) -> None:
        self.buffers: dict[str, dict[str, Any]] = {}
        self.templates: dict[str, dict[str, Any]] = {}
        self.patches: list[dict[str, Any]] = []

    def get_capacity_buffer(self, namespace: str, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.buffers.get(name))

    def create_capacity_buffer(self, namespace: str, body: dict[str, Any]) -> None:
        self.buffers[body["metadata"]["name"]] = {
            **body,
            "metadata": {**body["metadata"], "resourceVersion": "1"},
        }

    def patch_capacity_buffer(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self.patches.append(patch)
        buffer = self.buffers[name]
        buffer["metadata"]["annotations"].update(patch["metadata"].get("annotations", {}))
        buffer["spec"].update(patch["spec"])

    def delete_capacity_buffer(self, namespace: str, name: str) -> None:
        del self.buffers[name]

    def list_capacity_buffers(self, namespace: str, labels: object = None) -> list[dict[str, Any]]:
        return list(self.buffers.values())

    def get_pod_template(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.templates.get(name)

    def create_pod_template(self, namespace: str, body: dict[str, Any]) -> None:
        self.templates[body["metadata"]["name"]] = body

    def delete_pod_template(self, namespace: str, name: str) -> None:
        del self.templates[name]


def buffers(kube: FakeKube) -> CapacityBuffers:
    return CapacityBuffers(kube, namespace=NS, priority_class="p")  # type: ignore[arg-type]


def test_a_buffer_is_renewed_when_under_half_its_ttl_is_left() -> None:
    kube = FakeKube()
    assert buffers(kube).apply(SPEC, replicas=0, now=NOW) is False  # nothing asked: no buffer
    assert kube.buffers == {} and kube.templates == {}
    assert buffers(kube).apply(SPEC, replicas=2, now=NOW) is True  # created
    assert NAME in kube.templates
    assert buffers(kube).apply(SPEC, replicas=2, now=NOW + 1801) is False  # 1800 s left >= 1800
    assert kube.patches == []
    assert buffers(kube).apply(SPEC, replicas=2, now=NOW + 1802) is True  # 1799 s left: renew
    assert kube.buffers[NAME]["metadata"]["annotations"][lbl.EXPIRES_AT] == str(NOW + 1802 + 3601)


def test_a_change_of_replicas_or_limits_is_written_at_once_and_nothing_else_is() -> None:
    kube = FakeKube()
    buffers(kube).apply(SPEC, replicas=2, now=NOW, limit_gpus=64)
    assert kube.buffers[NAME]["spec"]["limits"] == {GPU: "64"}
    assert buffers(kube).apply(SPEC, replicas=2, now=NOW + 1, limit_gpus=64) is False
    assert buffers(kube).apply(SPEC, replicas=2, now=NOW + 2) is False  # no limit: none compared
    assert buffers(kube).apply(SPEC, replicas=2, now=NOW + 3, limit_gpus=32) is True
    assert buffers(kube).apply(SPEC, replicas=3, now=NOW + 4) is True
    assert "limits" not in kube.patches[-1]["spec"]
    assert buffers(kube).apply(SPEC, replicas=0, now=NOW + 5) is True
    assert buffers(kube).apply(SPEC, replicas=0, now=NOW + 9000) is False  # zero never expires


def test_a_buffer_without_replicas_is_written_when_replicas_are_wanted() -> None:
    kube = FakeKube()
    buffers(kube).apply(SPEC, replicas=1, now=NOW)
    del kube.buffers[NAME]["spec"]["replicas"]
    assert buffers(kube).apply(SPEC, replicas=1, now=NOW + 1) is True


def test_expired_at_the_deadline_to_the_second_and_only_while_holding() -> None:
    kube = FakeKube()
    buffers(kube).apply(SPEC, replicas=1, now=NOW)
    deadline = NOW + 3601
    assert buffers(kube).expired(now=deadline - 1) == []
    assert [b["metadata"]["name"] for b in buffers(kube).expired(now=deadline)] == [NAME]
    assert buffers(kube).zero(NAME) is True
    assert buffers(kube).expired(now=deadline) == []  # zero replicas: nothing left to expire
    assert buffers(kube).zero(NAME) is False  # nothing to zero: no write


def test_a_deadline_that_cannot_be_read_is_already_past() -> None:
    def buffer(annotations: dict[str, str]) -> dict[str, Any]:
        return {"metadata": {"annotations": annotations}}

    assert _expires_at(buffer({lbl.EXPIRES_AT: str(NOW)})) == NOW
    assert _expires_at(buffer({})) == 0
    assert _expires_at(buffer({lbl.EXPIRES_AT: "soon"})) == 0


def test_removed_only_once_drained_with_its_template() -> None:
    kube = FakeKube()
    assert buffers(kube).remove("gpu") is None  # nothing there
    buffers(kube).apply(SPEC, replicas=1, now=NOW)
    assert buffers(kube).remove("gpu") is False  # still asks for a replica
    buffers(kube).zero(NAME)
    kube.buffers[NAME]["status"] = {"replicas": 1}
    assert buffers(kube).remove("gpu") is False  # the autoscaler still holds one
    kube.buffers[NAME]["status"] = {"replicas": 0}
    assert buffers(kube).remove("gpu") is True
    assert kube.buffers == {} and kube.templates == {}
    buffers(kube)._ensure_template(SPEC)  # a template left behind alone
    assert buffers(kube).remove("gpu") is True and kube.templates == {}


def test_a_buffer_without_a_replicas_field_holds_none() -> None:
    kube = FakeKube()
    buffers(kube).apply(SPEC, replicas=1, now=NOW)
    del kube.buffers[NAME]["spec"]["replicas"]
    assert buffers(kube).apply(SPEC, replicas=0, now=NOW + 1) is False
    assert buffers(kube).zero(NAME) is False
    assert buffers(kube).expired(now=NOW + 9000) == []
    assert buffers(kube).remove("gpu") is True  # no status either: drained
