"""A state the daemon cannot trust stops prewarm; it never starts a fresh daily budget.

Cases: a state of a newer format, of the wrong shape (pools a list, ledger a string) or empty
(``{}``) - the tick does not raise, reports a ``state`` error (status, errors metric), plans no
prewarm and saves nothing over what it could not read, and recovers once the state is readable;
a missing state ConfigMap (or one without ``state.json``) is a fresh start on a fresh install but
refused - with a Warning Event on the ConfigMap - when the leader Lease shows a leader from before
this process; ``forecaster resume --reset-state`` is the explicit way out. The compact format
keeps the state of 150 busy pools under the 1 MiB object limit, and format 2 is still read.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from forecaster.actuators.coordination.leases import LEASE_NAME, LeaderElector, lease_body
from forecaster.actuators.coordination.state_store import ConfigMapStateStore
from forecaster.actuators.kube import Kube, api_client
from forecaster.cli import main
from forecaster.core.error_budget import ErrorBudgetState
from forecaster.core.notice import Outcome
from forecaster.core.planner import Mode
from forecaster.errors import ActuationError
from forecaster.reconcile.state import (
    FORMAT_VERSION,
    MAX_NOTICE_OUTCOMES,
    MemoryStateStore,
    PendingForecast,
    PoolState,
    ServiceState,
    StateFormatError,
)
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.testing.fakes import POOL, T0
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.service.conftest import what_if_daemon

NS = "forecaster"
FRESH = ServiceState(last_tick=T0).to_dict()


def daemon(tmp_path: Path, saved: Any) -> tuple[Daemon, MemoryStateStore]:
    running = what_if_daemon(tmp_path)
    store = MemoryStateStore()
    store.data = saved
    running.reconciler.state_store = store
    return running, store


@pytest.mark.parametrize(
    ("saved", "says"),
    [
        ({"format_version": 99, "pools": {}, "ledger": {}}, "newer than this version reads"),
        ({**FRESH, "format_version": FORMAT_VERSION + 1}, "newer than this version reads"),
        ({"format_version": 3, "pools": [], "ledger": {}}, "lacks its pools or ledger"),
        ({"format_version": 3, "pools": {}, "ledger": "x"}, "lacks its pools or ledger"),
        ({"format_version": 2, "pools": {}, "ledger": {"buckets": 5}}, "ledger is unreadable"),
        ({"format_version": True, "pools": {}, "ledger": {}}, "is not a number"),
        ({}, "is empty"),
        # a damaged notice section: read as empty it would trust a source that had been cut
        ({**FRESH, "notice": {"sources": ["cronjob"], "rows": []}}, "notice outcomes are"),
        ({**FRESH, "notice_in_flight": [{"pool": 1}]}, "notice items in flight are"),
        ({**FRESH, "notice_use": {"seconds": [["a"]]}}, "notice use is unreadable"),
    ],
)
def test_an_untrusted_state_stops_prewarm_and_says_why(
    tmp_path: Path, saved: dict[str, Any], says: str
) -> None:
    running, store = daemon(tmp_path, saved)
    record = running.reconcile(T0)  # never raises
    assert record is not None
    (error,) = [e for e in record.errors if e.kind == "state"]
    assert says in error.message and "as if the GPU-hours budget were spent" in error.message
    assert record.plan.total_target_gpus == 0
    assert store.data is saved  # nothing written over what could not be read
    status = TestClient(create_app(running)).get("/api/v1/status").json()
    assert any(says in e["message"] for e in status["errors"])
    assert running.metrics.errors.labels(kind="state")._value.get() == 1
    store.data = ServiceState().to_dict()  # the operator restores it: the next tick acts
    again = running.reconcile(T0 + 60)
    assert again is not None and again.plan.total_target_gpus > 0


def test_a_fresh_state_prewarms(tmp_path: Path) -> None:
    running, store = daemon(tmp_path, None)
    record = running.reconcile(T0)
    assert record is not None and record.plan.total_target_gpus > 0 and not record.errors
    assert store.data is not None and store.data["format_version"] == FORMAT_VERSION


def elector(api: KubeApiDouble, *, started: float) -> LeaderElector:
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    return LeaderElector(
        kube,
        namespace=NS,
        name=LEASE_NAME,
        identity="replica-b",
        wall=lambda: started,
        monotonic=lambda: 0.0,
    )


@pytest.mark.parametrize("config_map", [None, {}])
def test_a_lost_state_after_an_earlier_leader_is_refused_with_an_event(
    config_map: dict[str, str] | None,
) -> None:
    with KubeApiDouble() as api:
        api.put(
            "leases",
            lease_body(NS, LEASE_NAME, identity="replica-a", duration=15, now=T0, transitions=0),
        )
        if config_map is not None:  # as the manifests create it: no state.json yet
            api.put(
                "configmaps",
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "forecaster-state", "namespace": NS},
                    "data": config_map,
                },
            )
        leader = elector(api, started=T0 + 3600)  # replica-a led an hour before we started
        assert not leader.try_acquire_or_renew()  # replica-a's record is fresh to us
        assert leader.earlier_leader() is not None
        kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
        store = ConfigMapStateStore(
            kube, namespace=NS, name="forecaster-state", earlier_leader=leader.earlier_leader
        )
        with pytest.raises(ActuationError, match="earlier leader \\(replica-a"):
            store.load()
        store.refused("state lost", now=T0)
        store.refused("state lost", now=T0 + 15)  # once per message
        events = api.objects("events", NS)
        assert [(e["reason"], e["involvedObject"]["name"]) for e in events] == [
            ("StateRefused", "forecaster-state")
        ]


def test_a_fresh_install_starts_with_a_fresh_state() -> None:
    with KubeApiDouble() as api:
        # a replica started with us took the Lease first: no leader before this process
        api.put(
            "leases",
            lease_body(NS, LEASE_NAME, identity="replica-a", duration=15, now=T0, transitions=0),
        )
        leader = elector(api, started=T0 - 5)
        leader.try_acquire_or_renew()
        assert leader.earlier_leader() is None
        kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
        store = ConfigMapStateStore(
            kube, namespace=NS, name="forecaster-state", earlier_leader=leader.earlier_leader
        )
        assert store.load() is None


def test_resume_reset_state_is_the_way_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "forecaster.yaml"
    config.write_text(
        "source: {kind: prometheus}\npools: [{name: gpu-a, max_prewarm_gpus: 32}]\n"
        f"models_dir: {tmp_path / 'models'}\n"
    )
    with KubeApiDouble() as api:
        api.put(
            "leases",
            lease_body(NS, LEASE_NAME, identity="replica-a", duration=15, now=T0, transitions=0),
        )
        assert (
            main(["resume", "--reset-state", "--config", str(config), "--kube-host", api.url]) == 0
        )
        (state,) = [
            c for c in api.objects("configmaps", NS) if c["metadata"]["name"] == "forecaster-state"
        ]
        saved = json.loads(state["data"]["state.json"])
        assert ServiceState.from_dict(saved).ledger.buckets == ()
        assert "reset" in capsys.readouterr().out


def busy_pool() -> PoolState:
    """A pool with a full day of tallies, waste and pending forecasts."""
    day = [T0 - 86400 + 300 * i for i in range(288)]
    budget = ErrorBudgetState(
        mode=Mode.PREDICTIVE,
        since=T0 - 86400,
        points=tuple((t, 20, i % 3) for i, t in enumerate(day)),
        waste=tuple((t, 0.123456 * (i % 7)) for i, t in enumerate(day)),
    )
    pending = [
        PendingForecast(T0 + 60 * i, T0 + 60 * i + 900, 37.25, i % 2 == 0) for i in range(45)
    ]
    return PoolState(budget=budget, pending=pending)


def test_the_state_of_150_busy_pools_fits_a_config_map() -> None:
    """With a full notice ledger too: its verdicts come back but for the items' keys."""
    outcomes = tuple(
        Outcome(
            f"source-{i % 3}",
            f"pool-{i % 150:03d}",
            f"cronjob ml/run-{i}",
            i % 4 != 0,
            T0 - 7 * 86400 + 300 * i,
            held_gpu_hours=0.0 if i % 4 else 2.667,
            gpus=16,
            notice_seconds=86400 + i,
            ahead=i % 4 != 0,
        )
        for i in range(MAX_NOTICE_OUTCOMES)
    )
    state = ServiceState(
        pools={f"pool-{i:03d}": busy_pool() for i in range(150)}, last_tick=T0, notice=outcomes
    )
    text = json.dumps(state.to_dict(), sort_keys=True, separators=(",", ":"))
    assert len(text.encode()) < 900 * 1024  # 1 MiB less room for metadata and growth
    back = ServiceState.from_dict(json.loads(text))
    assert back.notice == tuple(dataclasses.replace(o, key="") for o in outcomes)
    original = busy_pool()
    assert back.pools["pool-007"].budget.points == original.budget.points
    assert back.pools["pool-007"].pending == original.pending
    assert back.pools["pool-007"].budget.waste == tuple(
        (t, round(v, 4)) for t, v in original.budget.waste
    )
    with KubeApiDouble() as api:  # the double refuses objects over 1 MiB, as the API server does
        kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
        store = ConfigMapStateStore(kube, namespace=NS, name="forecaster-state")
        store.save(state.to_dict())
        assert store.load() is not None


def test_format_2_is_still_read() -> None:
    old = {
        "format_version": 2,
        "last_tick": T0,
        "ledger": {"buckets": [[T0 - 300, 0.5]], "clock": T0, "last_seen": T0},
        "pools": {
            POOL: {
                "budget": {
                    "calm_since": None,
                    "mode": "handed-off",
                    "points": [[T0 - 300, 5, 1]],
                    "reason": "r",
                    "since": T0 - 600,
                    "waste": [[T0 - 300, 0.25]],
                },
                "pending": [[T0 - 60, T0 + 840, 20.0, True]],
            }
        },
    }
    state = ServiceState.from_dict(old)
    pool = state.pools[POOL]
    assert pool.budget.mode is Mode.HANDED_OFF and pool.budget.points == ((T0 - 300, 5, 1),)
    assert pool.pending == [PendingForecast(T0 - 60, T0 + 840, 20.0, True)]
    assert datetime.fromtimestamp(state.ledger.buckets[0][0], tz=UTC)


def test_notice_verdicts_from_before_they_were_kept_are_none_and_damaged_ones_fail_closed() -> None:
    """A state written before the verdicts were kept is read with none (the sources start
    trusted, as before a restart kept them); a damaged notice section fails the state closed,
    like a damaged ledger - read as empty, it would trust a source again that had been cut."""
    before = ServiceState(last_tick=T0).to_dict()
    del before["notice"], before["notice_in_flight"], before["notice_use"]
    read = ServiceState.from_dict(before)
    assert (read.notice, read.notice_in_flight, read.last_tick) == ((), (), T0)
    damaged = ServiceState(last_tick=T0).to_dict()
    row = {"s": 1, "t": [T0], "c": [[0], [3], [1], [0.0], [16], [60], [0]]}  # pool 3 of none
    damaged["notice"] = {"sources": ["cronjob"], "pools": [], "rows": row}
    with pytest.raises(StateFormatError, match="notice outcomes are unreadable"):
        ServiceState.from_dict(damaged)


def test_notice_outcomes_of_format_3_are_read_with_no_namespace() -> None:
    """Format 3 kept no namespace per outcome: they read as the source's own (trust judged on
    the source alone for them), and the next save writes format 4."""
    older = ServiceState(last_tick=T0).to_dict()
    older["format_version"] = 3
    row = {"s": 1, "t": [T0], "c": [[0], [0], [1], [0.0], [16], [60], [0]]}  # came, 16 GPUs
    older["notice"] = {"sources": ["cronjob"], "pools": ["gpu-a"], "rows": row}
    (outcome,) = ServiceState.from_dict(older).notice
    assert (outcome.source, outcome.namespace, outcome.came, outcome.gpus) == (
        "cronjob",
        "",
        True,
        16,
    )
    assert outcome.trust_key == "cronjob"
    again = ServiceState.from_dict(ServiceState(last_tick=T0, notice=(outcome,)).to_dict())
    assert again.notice == (outcome,)
