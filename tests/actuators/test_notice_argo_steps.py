"""The Argo source's reading of a Workflow's steps, function by function (no API double): which
step waits on which, which steps' pods are of announced work, how many pods a step fans out to
(``tests/actuators/test_notice_argo.py`` shows the same through the API double)."""

from __future__ import annotations

from typing import Any

from forecaster.actuators.notice.argo import (
    _dependencies,
    _dependent_steps,
    _eta,
    _fan_out,
    _waiting,
)


def node(name: str, kind: str, phase: str, boundary: str = "", **more: Any) -> dict[str, Any]:
    return {
        "id": name,
        "displayName": name.rsplit(".", 1)[-1],
        "type": kind,
        "phase": phase,
        **({"boundaryID": boundary} if boundary else {}),
        **more,
    }


DAG = {
    "name": "main",
    "dag": {
        "tasks": [
            {"name": "prep", "template": "prep"},
            {"name": "train", "template": "train", "dependencies": ["prep"]},
        ]
    },
}


def names(waiting: Any) -> list[str]:
    return [step["name"] for step, _ in waiting]


def test_only_a_running_dag_node_with_its_template_has_waiting_steps() -> None:
    templates = {"main": DAG}
    running = [
        node("wf", "DAG", "Running", templateName="main"),
        node("wf.prep", "Pod", "Running", "wf"),
    ]
    assert names(_waiting(running, templates)) == ["train"]
    done = [
        node("wf", "DAG", "Succeeded", templateName="main"),
        node("wf.prep", "Pod", "Running", "wf"),
    ]
    assert names(_waiting(done, templates)) == []  # the DAG is over: nothing waits in it
    unknown = [
        node("wf", "DAG", "Running", templateName="gone"),
        node("wf.prep", "Pod", "Running", "wf"),
    ]
    assert names(_waiting(unknown, templates)) == []


def test_a_step_started_in_another_dag_does_not_count_as_started_in_this_one() -> None:
    """Two DAG nodes of one template: ``prep`` started in the first only - ``train`` waits in the
    first; in the second nothing has started, so nothing is next."""
    nodes = [
        node("wf.a", "DAG", "Running", templateName="main"),
        node("wf.a.prep", "Pod", "Running", "wf.a"),
        node("wf.b", "DAG", "Running", templateName="main"),
    ]
    waiting = list(_waiting(nodes, {"main": DAG}))
    assert [(step["name"], [n["id"] for n in ups]) for step, ups in waiting] == [
        ("train", ["wf.a.prep"])
    ]


def test_the_dependent_steps_are_the_dag_tasks_with_dependencies_and_later_step_groups() -> None:
    templates: list[Any] = [
        "not a template",  # a malformed entry is passed over, the rest still read
        DAG,
        {"name": "flow", "steps": [[{"name": "first"}], [{"name": "second"}, "junk"], None]},
    ]
    assert _dependent_steps(templates) == {"train", "second"}


def test_a_step_fans_out_to_at_least_one_pod() -> None:
    assert _fan_out({}) == 1
    assert _fan_out({"withItems": []}) == 1
    assert _fan_out({"withItems": ["a", "b", "c"]}) == 3
    assert _fan_out({"withSequence": {"count": "1"}}) == 1
    assert _fan_out({"withSequence": {"count": 0}}) == 1
    assert _fan_out({"withSequence": {"count": "4"}}) == 4


def test_a_steps_template_waits_on_the_group_after_the_last_one_started() -> None:
    """Three groups, the first two started: the third waits on the second (earlier pairs whose
    second group started are passed over, not the end of the search)."""
    flow = {"name": "flow", "steps": [[{"name": "a"}], [{"name": "b"}], [{"name": "c"}]]}
    nodes = [
        node("wf", "Steps", "Running", templateName="flow"),
        node("wf.a", "Pod", "Succeeded", "wf"),
        node("wf.b", "Pod", "Running", "wf"),
    ]
    waiting = list(_waiting(nodes, {"flow": flow}))
    assert [(step["name"], [n["id"] for n in ups]) for step, ups in waiting] == [("c", ["wf.b"])]


def test_a_node_is_read_by_its_own_kind_and_past_the_nodes_before_it() -> None:
    """The pod node listed first is passed over, not the end of the search; a DAG template
    under a Steps node (or the reverse) waits on nothing."""
    pod_first = [
        node("wf.prep", "Pod", "Running", "wf"),
        node("wf", "DAG", "Running", templateName="main"),
    ]
    assert names(_waiting(pod_first, {"main": DAG})) == ["train"]
    steps = {"name": "flow", "steps": [[{"name": "a"}], [{"name": "b"}]]}
    mixed = [
        node("wf", "Steps", "Running", templateName="main"),
        node("wf.prep", "Pod", "Running", "wf"),
        node("wf2", "DAG", "Running", templateName="flow"),
        node("wf2.a", "Pod", "Running", "wf2"),
    ]
    assert names(_waiting(mixed, {"main": DAG, "flow": steps})) == []


def test_a_tasks_dependencies_are_read_from_depends_too() -> None:
    assert _dependencies({"dependencies": ["a", "b"]}) == ["a", "b"]
    assert _dependencies({"depends": "prep.Succeeded && (other || third.Failed)"}) == [
        "prep",
        "other",
        "third",
    ]


def test_an_upstream_with_an_estimate_but_no_start_is_not_timed() -> None:
    assert _eta([{"phase": "Running", "estimatedDuration": 600}], 1000) is None
    started = {"phase": "Running", "startedAt": "1970-01-01T00:00:00Z", "estimatedDuration": 600}
    assert _eta([started], 1000) == 600
