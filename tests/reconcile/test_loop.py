"""The reconcile loop end to end: real client, API server double, live source, fake time.

Cases: a ramp in demand makes one tick protect the NodePool and create placeholders; sustained
misses burn the error budget, hand the pool off (placeholders withdrawn, NodePool restored byte
for byte, reason logged) and a restarted daemon remembers the hand-off from its ConfigMap;
stale data holds existing prewarm for hold_seconds, then withdraws it; dry-run sends zero writes;
forecast-only pools plan but never write; a tampered model artifact falls back to the baseline;
the operating point published with the model sets the quantile, the GPU-hours cap and the SLO
(only when a budget is configured); a state save that conflicts re-reads, one the API refuses is
the tick's error.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
from pathlib import Path

import pytest

from forecaster.app import doctor
from forecaster.core.budget import spent_last_day
from forecaster.core.operating_point import Budget, Candidate, operating_point
from forecaster.core.planner import Mode
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.forecasting.registry import build
from forecaster.reconcile.records import TickRecord
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history, settings
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import HOME, NS, client, placeholders, publish_with_point, reconciler


def test_one_tick_prewarms_a_forecast_ramp(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    record = reconciler(tmp_path, api, source).tick(T0)
    pool_plan = record.plan.pool(POOL)
    assert pool_plan.target_gpus >= 8 and record.errors == ()
    assert len(placeholders(api)) == pool_plan.placeholders
    assert "annotations" not in api.objects("nodepools")[0]["metadata"]  # no NodePool write
    state = json.loads(api.objects("configmaps", HOME)[0]["data"]["state.json"])
    assert state["pools"][POOL]["budget"]["mode"] == "predictive"
    assert len(state["pools"][POOL]["pending"]["t"]) == 1  # format 3: packed columns


def test_misses_hand_off_withdraw_and_survive_a_restart(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim, caplog: pytest.LogCaptureFixture
) -> None:
    original = copy.deepcopy(api.objects("nodepools")[0])
    source = LiveSource(T0 - 2 * 86400, calm_history())
    # one forecast is scored per 5-minute tick here: judge the 1 h window on 6 of them
    loop = reconciler(tmp_path, api, source, slo={"min_points": 6})
    loop.tick(T0)
    assert placeholders(api)
    now = T0
    modes = []
    with caplog.at_level(logging.WARNING, logger="forecaster.reconcile.loop"):
        for _ in range(30):  # demand climbs 12 GPUs every 5 minutes: far beyond any P95
            last = source.values[-1]
            source.append(*[last + 12 * (i + 1) / 5 for i in range(5)])
            now += 300
            api.clock = now
            record = loop.tick(now)
            modes.append(record.plan.pool(POOL).mode)
            if modes[-1] is Mode.HANDED_OFF:
                break
    assert modes[-1] is Mode.HANDED_OFF, modes
    assert any("predictive -> handed-off: error budget burning" in m for m in caplog.messages)
    assert placeholders(api) == []
    restored = api.objects("nodepools")[0]
    assert restored["spec"] == original["spec"]
    assert restored["metadata"].get("annotations") == original["metadata"].get("annotations")
    # a new process reads the hand-off back from the ConfigMap and does not prewarm
    restarted = reconciler(tmp_path, api, source, slo={"min_points": 6})
    record = restarted.tick(now + 60)
    assert record.plan.pool(POOL).mode is Mode.HANDED_OFF
    assert record.plan.pool(POOL).target_gpus == 0 and placeholders(api) == []


def test_stale_data_holds_existing_prewarm_then_withdraws(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    loop = reconciler(tmp_path, api, source)
    held = loop.tick(T0).plan.pool(POOL).placeholders
    assert held >= 1
    busy_cluster.step()  # the Job controller creates the placeholder pods
    source.fail = "Prometheus http://prom:9090 is unreachable: connection refused"
    record = loop.tick(T0 + 600)  # 10 min old: stale, within the 15 min hold
    assert "unreachable" in (record.error("data", POOL) or "")
    assert record.plan.pool(POOL).placeholders == held
    assert any("stale" in r for r in record.plan.pool(POOL).reasons)
    assert len(placeholders(api)) == held
    record = loop.tick(T0 + 1500)  # beyond stale_after + hold
    assert record.plan.pool(POOL).target_gpus == 0
    assert placeholders(api) == []
    assert "forecaster.io/original-disruption" not in (
        api.objects("nodepools")[0]["metadata"].get("annotations") or {}
    )


def test_dry_run_sends_zero_writes(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    before = len(api.writes())
    source = LiveSource(T0 - 2 * 86400, calm_history())
    record = reconciler(tmp_path, api, source, dry_run=True).tick(T0)
    assert record.plan.pool(POOL).target_gpus >= 8
    assert len(api.writes()) == before


def test_forecast_only_pools_plan_but_never_write(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    config_changes = {"pools": [{"name": POOL, "forecast_only": True}]}
    before = len(api.writes())
    record = reconciler(tmp_path, api, source, **config_changes).tick(T0)
    assert (
        record.plan.pool(POOL).mode is Mode.FORECAST_ONLY
        and record.plan.pool(POOL).target_gpus >= 8
    )
    writes = api.writes()[before:]
    assert [
        w.path for w in writes if "configmaps" not in w.path and "priorityclasses" not in w.path
    ] == []


def test_tampered_artifact_falls_back_to_the_baseline(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim, caplog: pytest.LogCaptureFixture
) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    store = ArtifactStore(tmp_path / "models")
    series, _ = source.fetch(POOL, start=0, end=T0, step_seconds=60)
    model = build("quantreg-raw", horizons_seconds=(300, 900, 1800), quantiles=(0.5, 0.95)).fit(
        series
    )
    version = store.publish(
        pool=POOL, model_name="quantreg-raw", model=model, metadata={}, created="20260101T000000Z"
    )
    path = tmp_path / "models" / POOL / f"{version}.json"
    path.write_text(path.read_text().replace('"quantreg-raw"', '"quantreg-evil"', 1))
    with caplog.at_level(logging.ERROR):
        record = reconciler(tmp_path, api, source).tick(T0)
    view = record.pools[POOL]
    assert (view.model, view.model_version) == ("persistence", "fallback")
    assert any("hash mismatch" in m and "persistence baseline" in m for m in caplog.messages)
    assert record.plan.pool(POOL).target_gpus >= 8


def test_guardrails_are_logged_at_start_up(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        findings = doctor.run_guardrails(settings(tmp_path), client(api), now=int(api.clock))
    assert [f.code for f in findings] == ["unprotected-gpu-workloads"]
    assert any("guardrail unprotected-gpu-workloads (gpu-a)" in m for m in caplog.messages)


def test_an_unreadable_state_fails_closed_and_never_resets_the_ledger(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    loop = reconciler(tmp_path, api, source)
    for minute in range(0, 31, 5):
        if minute:
            source.append(*[source.values[-1]] * 5)
        api.clock = T0 + 60 * minute
        loop.tick(T0 + 60 * minute)
        busy_cluster.step()
        api.clock += 60
        busy_cluster.step()
    spent = spent_last_day(loop.state.ledger)
    assert spent > 0
    # a restarted replica meets a transient read error on the state ConfigMap
    api.faults.add("GET", r"/configmaps/", status=500, times=4)
    restarted = reconciler(tmp_path, api, source)
    source.append(*[source.values[-1]] * 5)
    now = T0 + 35 * 60
    record = restarted.tick(now)
    assert "acting as if the GPU-hours budget were spent" in (record.error("state") or "")
    assert record.plan.pool(POOL).target_gpus == 0
    assert any("GPU-hours/day budget" in r for r in record.plan.pool(POOL).reasons), (
        record.plan.pool(POOL).reasons
    )
    saved = json.loads(api.objects("configmaps", HOME)[0]["data"]["state.json"])
    assert saved["ledger"]["buckets"]  # nothing was overwritten with an empty ledger
    # once it can be read, the day's spend is still there
    record = restarted.tick(now + 30)
    assert record.error("state") is None
    assert record.plan.gpu_hours_spent_last_day >= spent


def test_capacity_buffer_spend_is_charged_and_capped_like_placeholders(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    loop = reconciler(
        tmp_path,
        api,
        source,
        planning={"budgets": {"max_total_prewarm_gpus": 48, "max_prewarm_gpu_hours_per_day": 24}},
        pools=[{"name": POOL, "max_prewarm_gpus": 32, "backend": "capacitybuffer"}],
    )
    record = loop.tick(T0)
    (buffer,) = api.objects("capacitybuffers", NS)
    replicas = buffer["spec"]["replicas"]
    assert replicas >= 1 and record.plan.pool(POOL).target_gpus == 8 * replicas
    for _ in range(replicas):  # Karpenter keeps that headroom as pod-less nodes
        busy_cluster.add_node(POOL)
    now, targets, capped = T0, [], []
    for _ in range(6):  # the buffer's nodes are billed to us, hour after hour
        now += 3600
        source.append(*[source.values[-1]] * 60)
        api.clock = now
        record = loop.tick(now)
        targets.append(record.plan.pool(POOL).target_gpus)
        capped.append(any("GPU-hours/day budget" in r for r in record.plan.pool(POOL).reasons))
        view = record.pools[POOL].snapshot
        assert view is not None
        if view.prewarm_gpus:  # while the buffer holds: its headroom is prewarm, not spare
            assert view.prewarm_gpus == 8 * replicas and view.spare_gpus == 0
    assert spent_last_day(loop.state.ledger) >= 16  # two buffer hours at least were charged
    first = capped.index(True)  # the GPU-hours cap bound, as for placeholders
    assert targets[first] < targets[0], (targets, capped)
    assert api.objects("capacitybuffers", NS)[0]["spec"]["replicas"] == 0


def test_a_save_conflict_rereads_the_state_another_leader_wrote(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    a = reconciler(tmp_path, api, source)
    b = reconciler(tmp_path, api, source)
    a.tick(T0)
    b.tick(T0 + 30)  # b (briefly leader) saves a newer state: a's resourceVersion is stale
    b.state.pool(POOL).budget = dataclasses.replace(
        b.state.pool(POOL).budget, mode=Mode.HANDED_OFF, reason="b handed it off"
    )
    b.tick(T0 + 60)
    saved = json.loads(api.objects("configmaps", HOME)[0]["data"]["state.json"])
    assert saved["pools"][POOL]["budget"]["mode"] != "predictive"
    record = a.tick(T0 + 300)  # a's next save (5 min after its last) meets the conflict
    assert "re-reading it" in (record.error("state") or "")
    record = a.tick(T0 + 315)  # a now plans from what b wrote, not from its own memory
    assert record.plan.pool(POOL).mode is not Mode.PREDICTIVE


def test_a_state_save_the_api_refuses_is_the_ticks_error(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    loop = reconciler(tmp_path, api, LiveSource(T0 - 2 * 86400, calm_history()))
    assert loop.tick(T0).error("state") is None
    api.faults.add("PUT", r"/configmaps/", status=500, times=1000)
    record = loop.tick(T0 + 300)  # a save is due: the API refuses it
    assert "could not save state" in (record.error("state") or "")
    api.faults.clear()


def test_a_follower_taking_over_acts_on_the_state_the_leader_left(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    leader, follower = reconciler(tmp_path, api, source), reconciler(tmp_path, api, source)
    leader.tick(T0)
    follower.tick(T0, act=False)  # reads the state once as a follower
    leader.state.pool(POOL).budget = dataclasses.replace(
        leader.state.pool(POOL).budget, mode=Mode.HANDED_OFF, reason="burning"
    )
    leader.tick(T0 + 30)  # the leader hands off, saves, then loses its Lease
    record = follower.tick(T0 + 60)  # the follower now leads: fresh state, not its memory
    assert record.plan.pool(POOL).mode is not Mode.PREDICTIVE
    assert record.plan.pool(POOL).target_gpus == 0


def test_state_is_saved_every_five_minutes_and_at_once_on_a_change_of_mode(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    loop = reconciler(tmp_path, api, source)

    def saved() -> dict[str, object]:
        return dict(json.loads(api.objects("configmaps", HOME)[0]["data"]["state.json"]))

    loop.tick(T0)
    assert saved()["last_tick"] == T0
    loop.tick(T0 + 60)  # a minute later: no ConfigMap write
    assert saved()["last_tick"] == T0
    loop.tick(T0 + 300)  # five minutes after the last save
    assert saved()["last_tick"] == T0 + 300
    loop.state.pool(POOL).budget = dataclasses.replace(
        loop.state.pool(POOL).budget, mode=Mode.HANDED_OFF, reason="burning"
    )
    loop.tick(T0 + 360)  # a hand-off is written at once: a restart must not forget it
    assert saved()["last_tick"] == T0 + 360
    assert saved()["pools"][POOL]["budget"]["mode"] != "predictive"  # type: ignore[index]


def test_a_quiet_tick_keeps_the_plan_and_a_new_pod_replans_at_once(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    loop = reconciler(tmp_path, api, source)

    def settle(now: int) -> TickRecord:
        """Tick until the cluster shows what the last plan did (our own writes change it)."""
        for at in range(now, now + 60, 15):
            busy_cluster.step()
            record = loop.tick(at)
            if not record.replanned:
                return record
        raise AssertionError("the loop never went quiet")

    loop.tick(T0)
    quiet = settle(T0 + 15)
    writes = len(api.writes())
    again = loop.tick(quiet.at + 5)  # nothing happened in between: the plan stands
    assert not again.replanned and again.at == quiet.at + 5
    assert again.plan == quiet.plan
    assert len(api.writes()) == writes  # no write of any kind, not even the state
    busy_cluster.submit("burst-0", POOL, 8)  # a pod created: answered within this tick
    record = loop.tick(quiet.at + 10)
    assert record.replanned
    assert record.pools[POOL].snapshot != again.pools[POOL].snapshot
    last = settle(quiet.at + 15)  # quiet again ...
    assert not last.replanned
    assert loop.tick(last.at + 60).replanned  # ... until a minute after the last plan


def test_the_operating_point_sets_the_quantile_the_cap_and_the_slo(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    chosen = operating_point(
        [Candidate(0.8, 1030.0, 20.0, 60.0, 0.01)],
        reactive_gpu_hours=1000.0,
        budget=Budget(percent=0.5),  # 5 GPU-hours a day: not even one 8-GPU node for the TTL
        window=(T0 - 3 * 86400, T0 - 2 * 86400),
    )
    assert chosen is not None and not chosen.within_budget
    publish_with_point(tmp_path / "models", source, chosen)
    ignored = reconciler(tmp_path, api, source).tick(T0)  # no budget set: the point is ignored
    assert ignored.pools[POOL].quantile == 0.95 and ignored.pools[POOL].operating_point is None
    assert ignored.plan.pool(POOL).target_gpus >= 8
    loop = reconciler(tmp_path, api, source, operating_point={"budget_percent": 5})
    record = loop.tick(T0 + 60)
    view = record.pools[POOL]
    assert view.quantile == 0.8 and view.operating_point == chosen
    assert view.demand is not None and view.demand.quantile == 0.8
    assert loop.slo_for(POOL).target_exceedance == pytest.approx(0.2)
    assert loop.slo_for(POOL).max_waste_gpu_hours_per_day == pytest.approx(5.0)
    assert loop.effective_budgets().max_prewarm_gpu_hours_per_day == pytest.approx(5.0)
    assert record.plan.pool(POOL).target_gpus == 0  # the budget is the cap
    assert any("GPU-hours" in r for r in record.plan.pool(POOL).reasons + record.plan.reasons)


def test_the_operating_point_sets_the_floor_the_pool_plans_above(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    chosen = operating_point(
        [Candidate(0.95, 1030.0, 20.0, 60.0, 0.01, floor_gpus=20)],
        reactive_gpu_hours=1000.0,
        budget=Budget(percent=50),
        window=(T0 - 3 * 86400, T0 - 2 * 86400),
    )
    assert chosen is not None and chosen.floor_gpus == 20 and chosen.label == "P95+20"
    publish_with_point(tmp_path / "models", source, chosen)
    plain = reconciler(tmp_path, api, source).tick(T0).plan.pool(POOL)
    assert not any("floor" in r for r in plain.reasons)  # no budget set: the point is ignored
    loop = reconciler(tmp_path, api, source, operating_point={"budget_percent": 50})
    floored = loop.tick(T0 + 60).plan.pool(POOL)
    assert loop.policy_for(loop.pools[0]).floor_gpus == 20
    assert floored.needed_gpus == max(plain.needed_gpus, 24)  # whole 8-GPU placeholders
    assert plain.needed_gpus < 24 and any("floor of 20 GPUs" in r for r in floored.reasons)


def test_a_point_the_model_cannot_forecast_is_ignored_and_said(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim, caplog: pytest.LogCaptureFixture
) -> None:
    """A P80 point on a model fitted for P50/P95 only (e.g. the quantiles were narrowed to
    [0.95] after the retrain): the pool plans at the configured P95 and the log says why."""
    source = LiveSource(T0 - 2 * 86400, calm_history())
    chosen = operating_point(
        [Candidate(0.8, 1030.0, 20.0, 60.0, 0.01)],
        reactive_gpu_hours=1000.0,
        budget=Budget(percent=5),
        window=(T0 - 3 * 86400, T0 - 2 * 86400),
    )
    series, _ = source.fetch(POOL, start=0, end=T0, step_seconds=60)
    model = build("quantreg-raw", horizons_seconds=(300, 900, 1800), quantiles=(0.5, 0.95))
    ArtifactStore(tmp_path / "models").publish(
        pool=POOL,
        model_name="quantreg-raw",
        model=model.fit(series),
        metadata={},
        created="20260101T000000Z",
        operating_point=chosen,
    )
    with caplog.at_level(logging.ERROR):
        loop = reconciler(
            tmp_path, api, source, operating_point={"budget_percent": 5, "quantiles": [0.95]}
        )
        record = loop.tick(T0)
    assert record.pools[POOL].quantile == 0.95 and record.pools[POOL].operating_point is None
    assert record.errors == () and record.plan.pool(POOL).target_gpus >= 8
    assert any("cannot forecast its operating point's P80" in m for m in caplog.messages)


def test_setting_a_budget_keeps_the_current_model_until_the_next_retrain(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    """A model trained before the budget was set (P50/P95 only, no point) still forecasts:
    the pool plans at the configured quantile, not with the fallback baseline."""
    source = LiveSource(T0 - 2 * 86400, calm_history())
    series, _ = source.fetch(POOL, start=0, end=T0, step_seconds=60)
    model = build("quantreg-raw", horizons_seconds=(300, 900, 1800), quantiles=(0.5, 0.95))
    ArtifactStore(tmp_path / "models").publish(
        pool=POOL,
        model_name="quantreg-raw",
        model=model.fit(series),
        metadata={},
        created="20260101T000000Z",
    )
    loop = reconciler(tmp_path, api, source, operating_point={"budget_percent": 5})
    view = loop.tick(T0).pools[POOL]
    assert (view.model, view.quantile, view.operating_point) == ("quantreg-raw", 0.95, None)
