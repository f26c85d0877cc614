"""The on-call kill switch, on the API double through the real CLI and the daemon's own wiring.

Cases: ``forecaster pause`` makes the leader withdraw every placeholder and restore the NodePool
pause within one tick, and the tick after that sends no write at all; the page's status and the
``forecaster_halted`` metric say so, with the reason; ``forecaster resume`` brings prewarm back
on the next tick; the GitOps form (a committed ConfigMap with only ``paused: "true"``) works
the same; a kill switch that cannot be read stops the tick from acting; "True" and " TRUE "
halt as "true" does, anything else (even "yes") does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from forecaster.actuators.coordination.control import Control
from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build
from forecaster.cli import main
from forecaster.core.actions import Halt
from forecaster.core.planner import Mode
from forecaster.reconcile.loop import Reconciler
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history, settings
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import HOME, client, placeholders, reconciler

ORIGINAL = "forecaster.io/original-disruption"


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "forecaster.yaml"
    document = settings(tmp_path).model_dump(mode="json", exclude={"twin"})
    path.write_text(yaml.safe_dump(document))
    return path


def _protected_loop(tmp_path: Path, api: KubeApiDouble) -> Reconciler:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    planning = settings(tmp_path).planning.model_dump(mode="json")
    return reconciler(tmp_path, api, source, planning={**planning, "protect_nodepools": True})


def _nodepool_annotations(api: KubeApiDouble) -> dict[str, str]:
    return dict(api.objects("nodepools")[0]["metadata"].get("annotations") or {})


def test_pause_withdraws_everything_in_one_tick_then_writes_nothing(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = _protected_loop(tmp_path, api)
    daemon = Daemon(reconciler=loop, pools=(POOL,))
    daemon.reconcile(T0)
    busy_cluster.step()
    assert placeholders(api) and ORIGINAL in _nodepool_annotations(api)

    config = _config(tmp_path)
    pause = ["pause", "--config", str(config), "--kube-host", api.url]
    assert main([*pause, "--reason", "INC-42 bad forecast"]) == 0
    assert "withdraws every prewarm within one tick" in capsys.readouterr().out
    # a second pause (another on-call, the same incident) keeps the first reason ...
    assert main([*pause, "--reason", "me too"]) == 0
    assert "already paused" in capsys.readouterr().out
    switch = Control(Kube(api_client(host=api.url), dry_run=True), namespace=HOME)
    assert (switch.read() or Halt("", "")).reason == "INC-42 bad forecast"
    # ... unless it says --force
    assert main([*pause, "--reason", "INC-43", "--force"]) == 0
    assert (switch.read() or Halt("", "")).reason == "INC-43"
    assert main([*pause, "--reason", "INC-42 bad forecast", "--force"]) == 0
    capsys.readouterr()
    record = daemon.reconcile(T0 + 30)
    assert record is not None and record.halt is not None
    assert record.halt.reason == "INC-42 bad forecast"
    assert record.plan.pool(POOL).mode is Mode.HALTED and record.plan.pool(POOL).target_gpus == 0
    assert placeholders(api) == []
    assert ORIGINAL not in _nodepool_annotations(api)  # the NodePool is ours no longer
    charged = loop.state.ledger
    assert charged.last_seen == T0 + 30 and charged.buckets  # what it held until now: charged

    before = len(api.writes())
    record = daemon.reconcile(T0 + 400)  # a full tick, with a state save due (5 min since)
    assert record is not None and record.replanned
    assert [w.path for w in api.writes()[before:]] == []  # halted: not one write
    assert loop.state.ledger == charged  # holding nothing: nothing charged
    api.faults.add("GET", r"/nodes", status=500, times=1000)  # the cluster cannot be read
    record = daemon.reconcile(T0 + 800)  # a state save due again
    assert record is not None and record.error("cluster")
    assert [w.path for w in api.writes()[before:]] == []  # halted, nothing known held: no write
    api.faults.clear()

    client = TestClient(create_app(daemon))
    status = client.get("/api/v1/status").json()
    assert status["halted"]["reason"] == "INC-42 bad forecast"
    assert status["pools"][POOL]["mode"] == "halted"
    assert "forecaster_halted 1.0" in client.get("/metrics").text

    assert main(["resume", "--config", str(config), "--kube-host", api.url]) == 0
    record = daemon.reconcile(T0 + 90)
    assert record is not None and record.halt is None
    pool_plan = record.plan.pool(POOL)  # the freed node is spare now: the target may be 0
    assert pool_plan.mode is Mode.PREDICTIVE and pool_plan.target_gpus == pool_plan.needed_gpus
    assert not any("kill switch" in r for r in (*pool_plan.reasons, *record.plan.reasons))
    assert "forecaster_halted 0.0" in client.get("/metrics").text


def test_a_committed_control_config_map_halts_too(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    loop = _protected_loop(tmp_path, api)
    loop.tick(T0)
    assert placeholders(api)
    api.put(
        "configmaps",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "forecaster-control", "namespace": HOME},
            "data": {"paused": "true"},
        },
    )
    record = loop.tick(T0 + 30)
    assert record.halt is not None and record.halt.reason == "no reason given"
    assert placeholders(api) == []
    assert any("kill switch on" in r for r in record.plan.reasons)


def test_an_unreadable_kill_switch_stops_the_tick_from_acting(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    loop = build.build_reconciler(settings(tmp_path), source=source, kube=client(api))
    api.faults.add("GET", "configmaps/forecaster-control", status=403, times=10)
    record = loop.tick(T0)
    assert "kill switch" in (record.error("cluster") or "")
    assert placeholders(api) == []


@pytest.mark.parametrize(
    ("data", "halted"),
    [
        ({"paused": "True"}, True),  # how a hand-written YAML boolean often comes out
        ({"paused": " TRUE \n"}, True),
        ({"paused": "true", "reason": "", "since": "12x"}, True),
        ({"paused": "false"}, False),
        ({"paused": "yes"}, False),  # only true means true: never a guess that halts
        ({}, False),
    ],
)
def test_the_kill_switch_reads_true_however_it_is_written(
    api: KubeApiDouble, data: dict[str, str], halted: bool
) -> None:
    metadata = {"name": "forecaster-control", "namespace": HOME}
    api.put(
        "configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}
    )
    halt = Control(client(api), namespace=HOME).read()
    assert (halt is not None) == halted
    if halt is not None:
        assert halt.reason == (data.get("reason") or "no reason given")
        assert halt.since is None  # a since that is not a number is not guessed


def test_the_kill_switch_says_who_paused_and_since_when(api: KubeApiDouble) -> None:
    metadata = {"name": "forecaster-control", "namespace": HOME}
    data = {"paused": "true", "reason": "INC-7", "by": "alice", "since": "1800000000"}
    api.put(
        "configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}
    )
    assert Control(client(api), namespace=HOME).read() == Halt("INC-7", "alice", 1_800_000_000)
    key = ("configmaps", HOME, "forecaster-control")
    api.store.replace(key, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata})
    assert Control(client(api), namespace=HOME).read() is None  # no data at all: run
