"""Mutation check: break each safety line on purpose and require the test suite to notice.

Each mutation replaces one exact piece of source in a scratch copy of the repository and runs
the tests that guard it there; the check fails if any mutant survives (its tests still pass) or
if a mutation no longer applies (the guarded line moved: update the list, do not drop it).
Run by ``scripts/test`` after the suite; ``scripts/mutation-check`` runs it alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# no cache to write; no schemathesis plugin (no listed test fuzzes the API, and loading it with
# hypothesis is about 2 s of every one of these runs)
QUIET_PLUGINS = ("-p", "no:cacheprovider", "-p", "no:schemathesis")


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    before: str
    after: str
    tests: tuple[str, ...]


MUTATIONS = (
    Mutation(
        "a step started in another DAG counts as started in this one",
        "forecaster/actuators/notice/argo.py",
        'if n.get("boundaryID") == node.get("id") and n.get("type") != "StepGroup"',
        'if n.get("type") != "StepGroup"',
        (
            "tests/actuators/test_notice_argo_steps.py::test_a_step_started_in_another_dag_does_not_count_as_started_in_this_one",
        ),
    ),
    Mutation(
        "a steps template stops at the first group that started",
        "forecaster/actuators/notice/argo.py",
        '                if any(s["name"] in started for s in group):\n'
        "                    continue",
        '                if any(s["name"] in started for s in group):\n                    break',
        (
            "tests/actuators/test_notice_argo_steps.py::test_a_steps_template_waits_on_the_group_after_the_last_one_started",
        ),
    ),
    Mutation(
        "a pending workload is timed by the latest quota to free, not the soonest",
        "forecaster/actuators/notice/kueue_pending.py",
        "            when, units = frees.pop(0)",
        "            when, units = frees.pop()",
        (
            "tests/actuators/test_notice_kueue_turns.py::test_each_pending_workload_waits_for_the_soonest_quota_that_covers_it",
        ),
    ),
    Mutation(
        "pending work past the look-ahead leaves later work announced out of turn",
        "forecaster/actuators/notice/kueue_pending.py",
        "        if earliest > context.now + MAX_AHEAD_SECONDS:\n            break",
        "        if earliest > context.now + MAX_AHEAD_SECONDS:\n            continue",
        (
            "tests/actuators/test_notice_kueue_turns.py::test_work_expected_past_the_look_ahead_ends_the_queues_items",
        ),
    ),
    Mutation(
        "running Kueue work of another ClusterQueue frees this queue's quota",
        "forecaster/actuators/notice/kueue_pending.py",
        'if admission.get("clusterQueue") != cq or condition_true(wl, "Finished"):',
        'if condition_true(wl, "Finished"):',
        (
            "tests/actuators/test_notice_kueue_turns.py::test_only_this_queues_admitted_unfinished_work_is_timed",
        ),
    ),
    Mutation(
        "a JobSet stage without replicas announces no pods",
        "forecaster/actuators/notice/jobsets.py",
        'pods=per_job * int(replicated.get("replicas", 1)),',
        'pods=per_job * int(replicated.get("replicas", 0)),',
        (
            "tests/actuators/test_notice_jobset_stages.py::test_fields_left_out_take_kubernetes_defaults",
        ),
    ),
    Mutation(
        "one pod a marker cannot read stops the other markers",
        "forecaster/actuators/notice/base.py",
        "            except Exception:  # one pod must not stop the reading of the others\n"
        "                continue",
        "            except Exception:  # one pod must not stop the reading of the others\n"
        "                return None",
        (
            "tests/actuators/test_notice_reader.py::test_one_pod_a_marker_cannot_read_leaves_the_next_markers_to_judge_it",
        ),
    ),
    Mutation(
        "a hanging source's backoff never grows",
        "forecaster/actuators/notice/base.py",
        "                self._hung[status.source] = (times + 1, now + wait)",
        "                self._hung[status.source] = (times, now + wait)",
        (
            "tests/actuators/test_notice_reader.py::test_a_hanging_source_is_skipped_for_a_growing_backoff_and_asked_again_at_its_end",
        ),
    ),
    Mutation(
        "a source read again keeps its hang backoff",
        "forecaster/actuators/notice/base.py",
        "                self._hung.pop(status.source, None)\n",
        "                pass\n",
        (
            "tests/actuators/test_notice_reader.py::test_a_hanging_source_is_skipped_for_a_growing_backoff_and_asked_again_at_its_end",
        ),
    ),
    Mutation(
        "the notice budget is not shared: each source gets its whole deadline",
        "forecaster/actuators/notice/base.py",
        "        left = budget_seconds - (time.monotonic() - started)",
        "        left = budget_seconds",
        (
            "tests/actuators/test_notice_reader.py::test_the_notice_budget_spent_leaves_the_rest_unread_but_said",
        ),
    ),
    Mutation(
        "a source's status counts another source's items that came",
        "forecaster/core/notice.py",
        "if o.source == status.source and o.came and o.at > now - TRUST_WINDOW_SECONDS",
        "if o.came and o.at > now - TRUST_WINDOW_SECONDS",
        ("tests/core/test_notice_edges.py::test_a_sources_status_counts_its_own_outcomes_only",),
    ),
    Mutation(
        "outcomes are forgotten a day before the trust check has judged them",
        "forecaster/core/notice.py",
        "kept = now - TRUST_WINDOW_SECONDS - DISTRUST_AFTER_SECONDS",
        "kept = now - TRUST_WINDOW_SECONDS",
        ("tests/core/test_notice_edges.py::test_outcomes_are_kept_for_the_trust_window_and_a_day",),
    ),
    Mutation(
        "ended items are remembered past their day",
        "forecaster/core/notice.py",
        "        if now - oldest >= ENDED_SECONDS:",
        "        if now - oldest > 2 * ENDED_SECONDS:",
        (
            "tests/core/test_notice_edges.py::test_ended_items_are_remembered_for_a_day_to_the_second",
        ),
    ),
    Mutation(
        "the trust check skips the moments an outcome leaves the window",
        "forecaster/core/notice.py",
        "changes = np.concatenate((ats, ats + TRUST_WINDOW_SECONDS))",
        "changes = ats",
        ("tests/core/test_notice_edges.py::test_a_moment_an_outcome_leaves_the_window_counts",),
    ),
    Mutation(
        "a namespace's first item due at once is granted a GPU past its share",
        "forecaster/core/notice.py",
        "        everywhere = overall.get(namespace, 0) + item.gpus",
        "        everywhere = overall.get(namespace, -1) + item.gpus",
        (
            "tests/core/test_notice_edges.py::test_a_namespaces_gpus_due_at_once_meet_the_total_share_exactly",
        ),
    ),
    Mutation(
        "an item that came while still listed is followed again (and judged twice)",
        "forecaster/core/notice.py",
        "            seen.pop(key, None)\n",
        "",
        (
            "tests/core/test_notice.py::test_an_item_comes_when_its_pods_come_not_when_it_leaves_the_reading",
        ),
    ),
    Mutation(
        "shedding none withdraws every item in flight",
        "forecaster/core/notice.py",
        "        if count <= 0:",
        "        if count < 0:",
        ("tests/core/test_notice.py::test_shedding_none_withdraws_nothing",),
    ),
    Mutation(
        "an item of negative pods is accepted when its GPUs per pod are not negative",
        "forecaster/core/notice.py",
        "if self.gpus_per_pod < 0 or self.pods < 0:",
        "if self.gpus_per_pod < 0 and self.pods < 0:",
        (
            "tests/core/test_notice.py::test_an_item_of_negative_gpus_or_pods_or_an_inverted_deadline_is_refused",
        ),
    ),
    Mutation(
        "a reading of a pool never visits its items in flight (none resolves)",
        "forecaster/core/notice.py",
        "            self._pool_keys.setdefault(pool, {})[key] = None\n",
        "",
        (
            "tests/core/test_notice.py::test_an_item_comes_when_its_pods_come_not_when_it_leaves_the_reading",
        ),
    ),
    Mutation(
        "a namespace's items past its share of the prewarm GPUs are planned anyway",
        "forecaster/core/planner.py",
        " and i.key not in distrusted)",
        ")",
        (
            "tests/core/test_notice.py::test_a_namespaces_items_due_at_once_past_its_share_of_the_caps_are_left_out",
        ),
    ),
    Mutation(
        "a namespace's work due at once is held to its share of the pool only, not of all pools",
        "forecaster/core/notice.py",
        "        if here > pool_limit or everywhere > total_limit:",
        "        if here > pool_limit:",
        (
            "tests/core/test_notice.py::test_a_namespaces_items_due_at_once_past_its_share_of_the_caps_are_left_out",
        ),
    ),
    Mutation(
        "a namespace's share of the prewarm GPUs is never used up",
        "forecaster/core/notice.py",
        "        on_pool[(namespace, pool)], overall[namespace] = here, everywhere",
        "        pass",
        (
            "tests/core/test_notice.py::test_a_namespaces_items_due_at_once_past_its_share_of_the_caps_are_left_out",
        ),
    ),
    Mutation(
        "the loop leaves out a namespace's items past its share of the pool by trust key only",
        "forecaster/reconcile/observing.py",
        "    return {name: {**cut, **over.get(name, {})} for name in names}",
        "    return {name: cut for name in names}",
        (
            "tests/faults/test_notice_spend_share.py::test_a_namespaces_work_due_at_once_is_planned_up_to_its_share_of_the_pool",
        ),
    ),
    Mutation(
        "a distrusted notice source's items are planned anyway",
        "forecaster/core/planner.py",
        "i for i in due if i.trust_key not in distrusted and ",
        "i for i in due if ",
        ("tests/core/test_notice.py::test_a_distrusted_sources_items_are_left_out_and_said",),
    ),
    Mutation(
        "an announced item that stayed past its latest start counts as come",
        "forecaster/core/notice.py",
        "        return now <= item.latest_start\n\n    def _outcome(",
        "        return True\n\n    def _outcome(",
        (
            "tests/core/test_notice.py::test_an_item_that_leaves_by_its_latest_start_came_one_that_stays_past_it_did_not",
        ),
    ),
    Mutation(
        "the prewarm held for an item that came is counted to its latest start, not its coming",
        "forecaster/core/notice.py",
        "            until = now if came else held.item.latest_start",
        "            until = held.item.latest_start",
        (
            "tests/core/test_notice.py::test_an_item_that_leaves_by_its_latest_start_came_one_that_stays_past_it_did_not",
        ),
    ),
    Mutation(
        "the prewarm held for items that came is charged as the source's waste",
        "forecaster/core/notice.py",
        "            if o.source == source and not o.came and o.at > now - TRUST_WINDOW_SECONDS",
        "            if o.source == source and o.at > now - TRUST_WINDOW_SECONDS",
        (
            "tests/core/test_notice.py::test_an_item_that_leaves_by_its_latest_start_came_one_that_stays_past_it_did_not",
        ),
    ),
    Mutation(
        "a source that could not be read gives a verdict on its items",
        "forecaster/core/notice.py",
        "        if key in seen or (readable is not None and item.source not in readable):",
        "        if key in seen:",
        ("tests/core/test_notice.py::test_a_source_not_read_this_time_gives_no_verdict",),
    ),
    Mutation(
        "a due announced item does not end a quiet tick",
        "forecaster/reconcile/quiet.py",
        "            return False  # announced work came into (or left) the window: plan again",
        "            pass",
        (
            "tests/actuators/test_notice_cronjobs.py::test_a_run_entering_the_window_is_planned_at_once_not_after_a_quiet_tick",
        ),
    ),
    Mutation(
        "a suspended CronJob announces its next run",
        "forecaster/actuators/notice/cronjobs.py",
        '        if spec.get("suspend"):\n            return []',
        "        if False:\n            return []",
        ("tests/actuators/test_notice_cronjobs.py::test_what_announces_nothing",),
    ),
    Mutation(
        "a running JobSet stage is announced again",
        "forecaster/actuators/notice/jobsets.py",
        '            if not depends or _started(counts.get(replicated["name"])):',
        "            if not depends:",
        ("tests/actuators/test_notice_jobsets.py::test_what_announces_nothing",),
    ),
    Mutation(
        "the error budget judges the model's forecast, not the demand the plan acted on",
        "forecaster/reconcile/scoring.py",
        "    return dataclasses.replace(demand, upper_gpus=planned - known)",
        "    return demand",
        (
            "tests/simulation/test_replay.py::test_the_daemon_prewarms_for_workloads_kueue_holds_and_is_judged_on_its_plan",
        ),
    ),
    Mutation(
        "the twin shows no Kueue notice",
        "forecaster/simulation/twin.py",
        '        if self.workloads is not None and "kueue" in self.cfg.notice_sources:',
        "        if False:",
        ("tests/simulation/test_twin.py::test_kueue_notice_shows_each_workload_before_its_pods",),
    ),
    Mutation(
        "training publishes the models only after every pool",
        "forecaster/app/training.py",
        "            publish_models(settings, mirror, pools=[pool.name])\n"
        "        results.append(result)\n    return results\n",
        "            pass\n        results.append(result)\n    if mirror is not None:\n"
        "        publish_models(settings, mirror, pools=[r.pool for r in results])\n"
        "    return results\n",
        ("tests/app/test_model_sharing.py::test_each_pool_is_published_as_soon_as_it_is_trained",),
    ),
    Mutation(
        "the training time budget starts a pool it cannot finish",
        "forecaster/app/training.py",
        "time_budget_seconds is not None and spent + longest > time_budget_seconds:",
        "time_budget_seconds is not None and spent > time_budget_seconds:",
        (
            "tests/app/test_training.py::test_a_time_budget_starts_no_pool_it_cannot_finish_and_the_stalest_go_first",
        ),
    ),
    Mutation(
        "the continuation bound knows a submission before its first pod",
        "forecaster/simulation/policies.py",
        "gpus = gpus[self.known_from[first:last] <= view.now]",
        "gpus = gpus[self.known_from[first:last] <= view.now + self.window_seconds]",
        (
            "tests/simulation/test_twin.py::test_continuation_knows_a_submission_only_once_its_first_pod_exists",
        ),
    ),
    Mutation(
        "the planner ignores the pool's floor",
        "forecaster/core/planner.py",
        "    if floor > needed:\n",
        "    if False:\n",
        (
            "tests/core/test_planner.py::test_a_floor_keeps_whole_placeholders_warm_whatever_the_forecast",
        ),
    ),
    Mutation(
        "a floor is not rounded up to whole placeholders",
        "forecaster/core/planner.py",
        "    floor = math.ceil(policy.floor_gpus / unit) * unit\n",
        "    floor = policy.floor_gpus\n",
        (
            "tests/core/test_planner.py::test_a_floor_keeps_whole_placeholders_warm_whatever_the_forecast",
        ),
    ),
    Mutation(
        "the daemon ignores the floor of its chosen point",
        "forecaster/reconcile/operating_points.py",
        "    return dataclasses.replace(runtime.policy, floor_gpus=point.floor_gpus)\n",
        "    return runtime.policy\n",
        (
            "tests/reconcile/test_loop.py::test_the_operating_point_sets_the_floor_the_pool_plans_above",
        ),
    ),
    Mutation(
        "a configured pool's replay at a point drops its floor",
        "forecaster/simulation/replay.py",
        "            policy = dataclasses.replace(runtime.policy, floor_gpus=floor_gpus)\n",
        "            policy = runtime.policy\n",
        (
            "tests/simulation/test_replay.py::test_replay_with_a_config_runs_the_configured_daemons_decision_path",
        ),
    ),
    Mutation(
        "floors beyond one over the budget are still replayed",
        "forecaster/core/operating_point.py",
        "    return within_budget(\n",
        "    return True or within_budget(\n",
        (
            "tests/simulation/test_operating_point.py::test_floors_are_tried_per_quantile_from_the_smallest_until_one_is_over_the_budget",
        ),
    ),
    Mutation(
        "a wait target is chosen as if it were a spend",
        "forecaster/core/operating_point.py",
        "    if budget.p95_wait_s is not None:\n        choice = cheapest_within_wait(",
        "    if False:\n        choice = cheapest_within_wait(",
        ("tests/core/test_operating_point.py",),
    ),
    Mutation(
        "a wait target's point replaces the operator's GPU-hours cap",
        "forecaster/core/operating_point.py",
        "any(p is None or p.p95_wait_target_s is not None for p in points)",
        "any(p is None for p in points)",
        ("tests/core/test_operating_point.py",),
    ),
    Mutation(
        "the operating point replays the demand level although the pool's pods are there",
        "forecaster/app/training.py",
        "            pods=pods,",
        "            pods=None,",
        (
            "tests/app/test_training.py::test_the_operating_point_replays_the_pools_pods_where_the_source_keeps_them",
        ),
    ),
    Mutation(
        "a pod history's window runs pods past its end",
        "forecaster/core/jobs.py",
        "duration=(np.minimum(finish[keep], end) - submit)[order],",
        "duration=(finish[keep] - submit)[order],",
        (
            "tests/simulation/test_replay.py::test_a_window_of_jobs_runs_the_same_gpus_in_it_and_nothing_outside",
        ),
    ),
    Mutation(
        "a pod's start time is only read from the first window that saw it",
        "forecaster/sources/prometheus.py",
        "started = started if math.isnan(seen.started) else seen.started",
        "started = seen.started",
        (
            "tests/sources/test_prometheus.py::test_pod_history_has_each_pods_creation_run_time_and_gpus",
        ),
    ),
    Mutation(
        "a fall ends a pod bigger than the fall (history replays below the real demand)",
        "forecaster/core/jobs.py",
        "while running and level - target >= gpus[running[0]]:",
        "while running and level > target:",
        ("tests/simulation/test_replay.py::test_series_become_pods_of_up_to_a_node_that_track_it",),
    ),
    Mutation(
        "evenly spaced samples off the grid take the short way (never snapped)",
        "forecaster/core/quality.py",
        "if ts[0] % step_seconds == 0 and bool(np.all(steps == step_seconds)):",
        "if bool(np.all(steps == step_seconds)):",
        ("tests/core/test_quality.py::test_a_clean_grid_takes_the_short_way_to_the_same_result",),
    ),
    Mutation(
        "a feature's reach misses the oldest step it reads",
        "forecaster/forecasting/features.py",
        "lo = min(max(int(index.min()) - steps, 0), values.size)",
        "lo = min(max(int(index.min()) - steps + 2, 0), values.size)",
        ("tests/forecasting/test_features.py",),
    ),
    Mutation(
        "the loop plans at the configured quantile despite the chosen point",
        "forecaster/reconcile/operating_points.py",
        "return point.quantile if point is not None else runtime.target_quantile",
        "return runtime.target_quantile",
        (
            "tests/reconcile/test_loop.py::test_the_operating_point_sets_the_quantile_the_cap_and_the_slo",
        ),
    ),
    Mutation(
        "the chosen point's budget does not cap GPU-hours",
        "forecaster/core/operating_point.py",
        "return replace(budgets, max_prewarm_gpu_hours_per_day=total)",
        "return budgets",
        (
            "tests/core/test_operating_point.py",
            "tests/reconcile/test_loop.py::test_the_operating_point_sets_the_quantile_the_cap_and_the_slo",
        ),
    ),
    Mutation(
        "the choice ignores the budget",
        "forecaster/core/operating_point.py",
        "    return candidate.gpu_hours <= reactive_gpu_hours * (1 + budget_percent / 100)\n",
        "    return True\n",
        ("tests/core/test_operating_point.py",),
    ),
    Mutation(
        "a P80 point keeps a P95 SLO (hands off all day)",
        "forecaster/core/operating_point.py",
        "planned, target_exceedance=max(slo.target_exceedance, planned.target_exceedance)",
        "planned, target_exceedance=slo.target_exceedance",
        ("tests/core/test_operating_point.py",),
    ),
    Mutation(
        "candidates are replayed without the budget cap",
        "forecaster/simulation/operating_point.py",
        "max_prewarm_gpu_hours_per_day=gpu_hours_per_day)",
        "max_prewarm_gpu_hours_per_day=1e9)",
        ("tests/simulation/test_operating_point.py",),
    ),
    Mutation(
        "a point the model cannot forecast is followed",
        "forecaster/reconcile/models.py",
        "if not _covers(artifact.model, self.horizons_seconds, (point.quantile,)):",
        "if False:",
        (
            "tests/reconcile/test_loop.py::test_a_point_the_model_cannot_forecast_is_ignored_and_said",
        ),
    ),
    Mutation(
        "a quiet tick ignores a new pod",
        "forecaster/reconcile/quiet.py",
        "return before.__dict__ | _NOT_COMPARED == after.__dict__ | _NOT_COMPARED",
        "return True",
        (
            "tests/reconcile/test_loop.py::test_a_quiet_tick_keeps_the_plan_and_a_new_pod_replans_at_once",
        ),
    ),
    Mutation(
        "a hand-off waits for the next scheduled save",
        "forecaster/reconcile/persisting.py",
        "return self.at is None or now - self.at >= every or modes != self.modes",
        "return self.at is None or now - self.at >= every",
        (
            "tests/reconcile/test_loop.py::test_state_is_saved_every_five_minutes_and_at_once_on_a_change_of_mode",
        ),
    ),
    Mutation(
        "day buckets out of order after the clock steps back",
        "forecaster/core/budget.py",
        "if kept and kept[-1][0] > bucket:",
        "if False:",
        ("tests/core/test_budget.py",),
    ),
    Mutation(
        "ledger records no spend",
        "forecaster/core/budget.py",
        "spend = gpus * step / 3600",
        "spend = 0.0",
        ("tests/core/test_budget.py", "tests/reconcile/test_loop.py"),
    ),
    Mutation(
        "ledger forgets spend when the clock jumps",
        "forecaster/core/budget.py",
        "step = min(max(0, now - ledger.last_seen), max_step_seconds)",
        "step = max(0, now - ledger.last_seen)",
        ("tests/core/test_budget.py",),
    ),
    Mutation(
        "total prewarm GPUs cap dropped",
        "forecaster/core/planner.py",
        "if extra > gpus_left:",
        "if False:",
        ("tests/core/test_planner.py",),
    ),
    Mutation(
        "cost per hour cap dropped",
        "forecaster/core/planner.py",
        "elif price > cost_left + 1e-9:",
        "elif False:",
        ("tests/core/test_planner.py",),
    ),
    Mutation(
        "GPU-hours per day cap dropped",
        "forecaster/core/planner.py",
        "elif extra * commitment_hours > gpu_hours_left + 1e-9:",
        "elif False:",
        ("tests/core/test_planner.py",),
    ),
    Mutation(
        "caps charge placeholders, not the nodes they launch",
        "forecaster/core/planner.py",
        "return whole_node_gpus(prewarm_gpus, gpus_per_node=policy.gpus_per_node)",
        "return prewarm_gpus",
        ("tests/core/test_planner.py",),
    ),
    Mutation(
        "placeholder Job has no deadline",
        "forecaster/actuators/prewarm/placeholders.py",
        '"activeDeadlineSeconds": spec.ttl_seconds,\n            "ttlSecondsAfterFinished"',
        '"ttlSecondsAfterFinished"',
        ("tests/actuators/test_actuation.py", "tests/faults/test_daemon_gone.py"),
    ),
    Mutation(
        "placeholders without karpenter.sh/do-not-disrupt",
        "forecaster/actuators/prewarm/placeholders.py",
        '{**annotations, lbl.DO_NOT_DISRUPT: "true"}',
        "dict(annotations)",
        ("tests/actuators/test_actuation.py",),
    ),
    Mutation(
        "CapacityBuffer spend never reaches the ledger",
        "forecaster/actuators/observe/observer.py",
        "if prewarm_held_gpus and not paused:",
        "if False:",
        (
            "tests/reconcile/test_loop.py::test_capacity_buffer_spend_is_charged_and_capped_like_placeholders",
        ),
    ),
    Mutation(
        "idle nodes kept by our NodePool pause are not billed",
        "forecaster/actuators/observe/observer.py",
        "elif name in ours_on or (paused and _ready(node) and name not in used_on):",
        "elif name in ours_on:",
        ("tests/actuators/test_actuation.py::test_empty_nodes_kept_by_our_pause_are_billed_to_us",),
    ),
    Mutation(
        "unsafe PriorityClass accepted",
        "forecaster/actuators/prewarm/placeholders.py",
        'if not isinstance(value, int) or not LOWEST_PRIORITY <= value < 0 or policy != "Never":',
        "if False:",
        ("tests/actuators/test_actuation.py::test_an_unsafe_priority_class_is_refused",),
    ),
    Mutation(
        "NodePool never restored",
        "forecaster/actuators/actuator.py",
        "        elif self.nodepools.restore(name):",
        "        elif False:",
        (
            "tests/actuators/test_actuation.py::test_hand_off_withdraws_everything_and_restores_the_nodepool_byte_for_byte",
        ),
    ),
    Mutation(
        "no hysteresis: the NodePool pause flaps with the target",
        "forecaster/core/planner.py",
        "return NodePoolAction.HOLD if until is not None and now < until else "
        "NodePoolAction.RESTORE",
        "return NodePoolAction.RESTORE",
        ("tests/actuators/test_actuation.py::test_a_flapping_target_does_not_flap_the_nodepool",),
    ),
    Mutation(
        "restore overwrites someone else's edit",
        "forecaster/actuators/nodepools.py",
        'if disruption.get(key) == record["applied"][key]:',
        "if True:",
        (
            "tests/actuators/test_actuation.py::test_restore_leaves_a_field_someone_else_changed_and_reports_it",
        ),
    ),
    Mutation(
        "expired NodePool pause not restored without the daemon",
        "forecaster/actuators/nodepools.py",
        'if expired_before is not None and int(record["until"]) >= expired_before:',
        "if expired_before is not None:",
        ("tests/faults/test_daemon_gone.py",),
    ),
    Mutation(
        "expired CapacityBuffer not zeroed without the daemon",
        "forecaster/actuators/prewarm/capacitybuffers.py",
        'if int(b["spec"].get("replicas", 0)) > 0 and _expires_at(b) <= now',
        "if False",
        ("tests/faults/test_daemon_gone.py",),
    ),
    Mutation(
        "no leadership check before a write",
        "forecaster/actuators/kube.py",
        "if guarded and self.guard is not None:",
        "if False:",
        ("tests/actuators/test_leases.py::test_writes_are_refused_once_leadership_lapses",),
    ),
    Mutation(
        "Lease expiry judged by the holder's wall clock",
        "forecaster/actuators/coordination/leases.py",
        'free = holder == "" or started - self._observed_at > duration',
        'free = holder == "" or self.wall() > datetime.fromisoformat('
        'str(spec["renewTime"]).replace("Z", "+00:00")).timestamp() + duration',
        ("tests/actuators/test_leases.py",),
    ),
    Mutation(
        "a stuck leader keeps renewing its Lease",
        "forecaster/service/scheduler.py",
        "if self.daemon.stuck():",
        "if False:",
        (
            "tests/service/test_cluster_service.py::test_a_stuck_leader_fails_liveness_and_lets_its_lease_lapse",
        ),
    ),
    Mutation(
        "a crash in one pool's forecast stops every pool",
        "forecaster/reconcile/loop.py",
        "except Exception as exc:  # a bug or malformed input harms only this pool",
        "except ForecasterError as exc:",
        ("tests/faults/test_isolation.py::test_a_malformed_object_stays_in_its_pool",),
    ),
    Mutation(
        "a malformed object makes the whole cluster unobservable",
        "forecaster/actuators/observe/observer.py",
        "snapshots[pool] = unobservable(pool, problem=_one_pool_problem(exc), now=now)",
        "raise MalformedObjectError(_one_pool_problem(exc)) from exc",
        ("tests/faults/test_isolation.py",),
    ),
    Mutation(
        "the daemon reads samples stamped after its own now",
        "forecaster/reconcile/forecast.py",
        "start=now - history.lookback_seconds, end=now,",
        "start=now - history.lookback_seconds, end=now + 3600,",
        ("tests/faults/test_data_faults.py",),
    ),
    Mutation(
        "a save conflict does not re-read the other leader's state",
        "forecaster/reconcile/persisting.py",
        "        return False\n    except ForecasterError as exc:",
        "    except ForecasterError as exc:",
        (
            "tests/reconcile/test_loop.py::test_a_save_conflict_rereads_the_state_another_leader_wrote",
        ),
    ),
    Mutation(
        "a follower taking over acts on the state it read long ago",
        "forecaster/reconcile/loop.py",
        "self._loaded = False  # a follower re-reads each tick: fresh when it takes over",
        "pass",
        (
            "tests/reconcile/test_loop.py::test_a_follower_taking_over_acts_on_the_state_the_leader_left",
        ),
    ),
    Mutation(
        "unreadable state starts from zero (fail open)",
        "forecaster/reconcile/loop.py",
        "spent = math.inf if not self._loaded else spent_last_day(self.state.ledger)",
        "spent = spent_last_day(self.state.ledger)",
        (
            "tests/reconcile/test_loop.py::test_an_unreadable_state_fails_closed_and_never_resets_the_ledger",
        ),
    ),
    Mutation(
        "uninstall cleanup does not fence the running leader",
        "forecaster/app/cleanup.py",
        "    if wait:\n        sleep(wait)\n",
        "",
        ("tests/service/test_cluster_service.py::test_uninstall_cleanup_fences_a_running_leader",),
    ),
    Mutation(
        "the Helm chart drifts from the Kustomize base",
        "deploy/helm/forecaster/templates/deployment.yaml",
        "terminationGracePeriodSeconds: 60",
        "terminationGracePeriodSeconds: 30",
        ("tests/deploy/test_helm.py",),
    ),
    Mutation(
        "auto keeps buffers nobody serves",
        "forecaster/actuators/prewarm/backends.py",
        "if asked and not conditions and waited >= UNSERVED_AFTER_SECONDS:",
        "if False:",
        (
            "tests/actuators/test_backends.py::test_auto_falls_back_when_no_autoscaler_acts_on_buffers",
        ),
    ),
    Mutation(
        "a buffer's own headroom counted as spare",
        "forecaster/actuators/observe/observer.py",
        "        prewarm_gpus=placeholders + prewarm_held_gpus,",
        "        prewarm_gpus=placeholders,",
        ("tests/actuators/test_backends.py",),
    ),
    Mutation(
        "Kueue quota cap dropped",
        "forecaster/core/planner.py",
        "    if snap.kueue is not None:",
        "    if False:",
        ("tests/actuators/test_kueue.py",),
    ),
    Mutation(
        "a buffer deleted while it still holds capacity",
        "forecaster/actuators/prewarm/capacitybuffers.py",
        'if int(buffer["spec"].get("replicas", 0)) > 0 or int(reported or 0) > 0:',
        "if False:",
        (
            "tests/actuators/test_backends.py::test_a_buffer_karpenter_has_not_drained_is_left_at_zero",
        ),
    ),
    Mutation(
        "the kill switch is ignored by the planner",
        "forecaster/core/planner.py",
        "    if halted is not None:\n        inputs = [",
        "    if False:\n        inputs = [",
        ("tests/service/test_kill_switch.py",),
    ),
    Mutation(
        "an unreadable kill switch is taken as off",
        "forecaster/reconcile/loop.py",
        "            snapshots = None  # the kill switch may be on",
        "            pass  # the kill switch may be on",
        (
            "tests/service/test_kill_switch.py::test_an_unreadable_kill_switch_stops_the_tick_from_acting",
        ),
    ),
    Mutation(
        "a halted daemon keeps writing its state",
        "forecaster/reconcile/loop.py",
        "        if halted and not held:",
        "        if False:",
        ("tests/service/test_kill_switch.py",),
    ),
    Mutation(
        "affinity-attributed pending pods are not counted",
        "forecaster/actuators/observe/observer.py",
        "                    home = nodepool_of(pod, shapes)",
        "                    home = None",
        ("tests/actuators/test_attribution.py",),
    ),
    Mutation(
        "the lighter NodePool wins",
        "forecaster/actuators/attribution.py",
        "key=lambda p: (-p.weight, p.name)",
        "key=lambda p: (p.weight, p.name)",
        ("tests/actuators/test_attribution.py",),
    ),
    Mutation(
        "prewarm grows while the cloud has no capacity",
        "forecaster/core/planner.py",
        "        cap = min(cap, held)",
        "        cap = cap",
        (
            "tests/core/test_planner.py::test_no_capacity_at_the_cloud_holds_what_exists_and_adds_nothing",
        ),
    ),
    Mutation(
        "a NodePool record from a newer format is trusted",
        "forecaster/actuators/nodepools.py",
        'if int(record.get("format", 1)) > lbl.OBJECT_FORMAT:',
        "if False:",
        ("tests/faults/test_upgrade.py::test_a_record_from_a_newer_format_is_left_alone",),
    ),
    Mutation(
        "prewarm is set before the NodePool is protected (its nodes may be consolidated)",
        "forecaster/core/actions.py",
        "        if pool_plan.nodepool is NodePoolAction.PAUSE:\n"
        "            out.append(ProtectNodePool(pool_plan.pool))\n"
        "        out.append(prewarm)\n",
        "        out.append(prewarm)\n"
        "        if pool_plan.nodepool is NodePoolAction.PAUSE:\n"
        "            out.append(ProtectNodePool(pool_plan.pool))\n",
        ("tests/core/test_actions.py",),
    ),
    Mutation(
        "a burn threshold above what a window can reach (a broken P80 forecast never hands off)",
        "forecaster/core/error_budget.py",
        "        return min(burn, round((1 + self.target_exceedance)"
        " / (2 * self.target_exceedance), 9))",
        "        return burn",
        ("tests/core/test_error_budget.py",),
    ),
    Mutation(
        "a handed-off pool recovers under a recovery burn above the capped hand-off threshold",
        "forecaster/core/error_budget.py",
        "        return min(self.recovery_burn, self.fast_threshold, self.slow_threshold)",
        "        return self.recovery_burn",
        (
            "tests/core/test_error_budget.py::test_a_pool_still_burning_does_not_recover_under_a_capped_threshold",
        ),
    ),
    Mutation(
        "the twin counts breaches of the pool and NodePool limits only, not of the shared caps",
        "forecaster/simulation/replay.py",
        "            self.twin, budgets=self.budgets, price_per_gpu_hour=self.price_per_gpu_hour\n",
        "            self.twin, price_per_gpu_hour=self.price_per_gpu_hour\n",
        ("tests/simulation/test_replay.py::test_the_twin_counts_a_breach_of_every_cap",),
    ),
    Mutation(
        "the SLO ignores the plan's quantile (a P80 plan would hand off all day)",
        "forecaster/core/error_budget.py",
        "        target_exceedance=round(1.0 - target_quantile, 9),\n",
        "",
        ("tests/test_settings.py", "tests/simulation/test_replay.py"),
    ),
    Mutation(
        "replay --config plans with replay's own pool, not the configured daemon's",
        "forecaster/app/build_replay.py",
        "    runtime = setup.runtime or PoolRuntime(",
        "    runtime = PoolRuntime(",
        (
            "tests/simulation/test_replay.py::test_replay_with_a_config_runs_the_configured_daemons_decision_path",
        ),
    ),
    Mutation(
        "a warm second pod hides the cold image pull of a fresh node",
        "forecaster/actuators/observe/lead.py",
        "cold[name] = max(cold.get(name, 0.0), started - scheduled)",
        "cold[name] = started - scheduled",
        ("tests/actuators/test_lead.py",),
    ),
    Mutation(
        "doctor never says image pull dominates the lead",
        "forecaster/actuators/guardrails.py",
        "if measured.startup_seconds is not None and measured.startup_seconds > total / 2:",
        "if False:",
        ("tests/actuators/test_lead.py",),
    ),
    Mutation(
        "the plan ignores the measured lead and keeps the configured horizon",
        "forecaster/reconcile/loop.py",
        "        horizon = runtime.horizon(measured)",
        "        horizon = runtime.horizon(None)",
        ("tests/actuators/test_lead.py::test_slow_launches_make_the_plan_forecast_further_ahead",),
    ),
    Mutation(
        "nodes registered Ready at creation count as instant launches",
        "forecaster/actuators/observe/lead.py",
        "        if took >= MIN_LAUNCH_SECONDS:",
        "        if took >= 0:",
        ("tests/actuators/test_lead.py",),
    ),
    Mutation(
        "our placeholders count as arrivals (the plan would chase its own prewarm)",
        "forecaster/actuators/observe/pod_tally.py",
        '.get(node_name or "", 0) + gpus\n            continue',
        '.get(node_name or "", 0) + gpus',
        ("tests/actuators/test_observed_signals.py",),
    ),
    Mutation(
        "peak forecasts are scored at the window's end only (misses go unseen)",
        "forecaster/reconcile/scoring.py",
        "        if pending.peak:",
        "        if False:",
        ("tests/reconcile/test_arrivals_path.py",),
    ),
    Mutation(
        "the plan ignores the arrivals model",
        "forecaster/reconcile/forecast.py",
        "    if model is None or recent is None or snapshot.problem is not None:",
        "    if True:",
        ("tests/reconcile/test_arrivals_path.py",),
    ),
    Mutation(
        "placeholders pull images that other teams' pods pulled with a secret",
        "forecaster/actuators/observe/pod_tally.py",
        'if age < ARRIVAL_WINDOWS_SECONDS[-1] and not pod["spec"].get("imagePullSecrets"):',
        "if age < ARRIVAL_WINDOWS_SECONDS[-1]:",
        (
            "tests/actuators/test_actuation.py::test_new_placeholders_pull_the_images_the_pools_pods_ran",
        ),
    ),
    Mutation(
        "a local forecast-only run writes a Lease",
        "forecaster/cli/commands.py",
        "elect=not local",
        "elect=True",
        ("tests/service/test_local_forecast_only.py",),
    ),
    Mutation(
        "the pod watch's cache is read while out of sync",
        "forecaster/actuators/observe/pod_watch.py",
        "            if self._version is None:\n                return None\n",
        "",
        (
            "tests/actuators/test_pod_watch.py::test_nothing_is_served_between_a_failure_and_the_next_list",
        ),
    ),
    Mutation(
        "a silent pod watch is trusted",
        "forecaster/actuators/observe/pod_watch.py",
        "if self.monotonic() - self._heard > self.stale_after_seconds:",
        "if False:",
        ("tests/actuators/test_pod_watch.py::test_a_silent_watch_is_not_trusted",),
    ),
    Mutation(
        "with the pod watch in sync, our placeholders are not read",
        "forecaster/actuators/observe/pod_watch.py",
        "    return cached + kube.list_pods(labels=OURS, fields=LIVE_PODS)",
        "    return cached",
        (
            "tests/actuators/test_pod_watch.py::test_the_cache_follows_the_cluster_and_never_holds_ours",
        ),
    ),
    Mutation(
        "the pod watch caches our own placeholders",
        "forecaster/actuators/observe/pod_watch.py",
        "                resource_version=self._version,\n                labels=NOT_OURS,",
        "                resource_version=self._version,\n                labels=None,",
        (
            "tests/actuators/test_pod_watch.py::test_the_cache_follows_the_cluster_and_never_holds_ours",
        ),
    ),
    Mutation(
        "the pod watch keeps deleted pods",
        "forecaster/actuators/observe/pod_watch.py",
        "                self._pods.pop(key, None)",
        "                pass",
        (
            "tests/actuators/test_pod_watch.py::test_the_cache_follows_the_cluster_and_never_holds_ours",
        ),
    ),
    Mutation(
        "the pod watch slims away a field the observer reads",
        "forecaster/actuators/observe/pod_watch.py",
        '    "args",\n)',
        '    "args",\n    "image",\n)',
        (
            "tests/actuators/test_pod_watch.py::test_the_observer_reads_the_cache_and_lists_only_ours",
        ),
    ),
    Mutation(
        "updates of known pods wake the loop",
        "forecaster/actuators/observe/pod_watch.py",
        "arrived = key not in self._pods and _pending_gpu_pod(pod)",
        "arrived = _pending_gpu_pod(pod)",
        (
            "tests/actuators/test_pod_watch.py::test_new_pending_gpu_pods_wake_the_loop_and_nothing_else_does",
        ),
    ),
    Mutation(
        "a new pending GPU pod does not wake the loop",
        "forecaster/service/scheduler.py",
        "        self._woken.set()",
        "        pass",
        (
            "tests/service/test_cluster_service.py::test_a_new_pending_gpu_pod_wakes_a_tick_before_the_interval",
        ),
    ),
    Mutation(
        "replay decides only at ticks although the daemon's pod watch wakes it",
        "forecaster/simulation/twin.py",
        "            self._queue_wake()  # its pod is created now: what the pod watch sees",
        "            pass",
        ("tests/simulation/test_twin.py::test_a_new_pod_wakes_a_decision_as_the_pod_watch_does",),
    ),
    Mutation(
        "replay --config ignores watch_pods",
        "forecaster/app/build_replay.py",
        "wake_seconds=MIN_WAKE_SECONDS if settings.watch_pods else None,",
        "wake_seconds=None,",
        (
            "tests/simulation/test_replay.py::test_replay_with_a_config_runs_the_configured_daemons_decision_path",
        ),
    ),
    Mutation(
        "a tick appends to the trail while the endpoint iterates it",
        "forecaster/service/daemon.py",
        "        with self._view_lock:\n            self._append(record, point)",
        "        self._append(record, point)",
        (
            "tests/service/test_endpoint_race.py::test_a_trail_changed_during_iteration_never_fails_an_endpoint",
        ),
    ),
    Mutation(
        "an empty state is read as a fresh daily budget",
        "forecaster/reconcile/state.py",
        "        if not isinstance(data, dict) or not data:",
        "        if not isinstance(data, dict):",
        (
            "tests/faults/test_fail_closed_state.py::test_an_untrusted_state_stops_prewarm_and_says_why",
        ),
    ),
    Mutation(
        "a state of the wrong shape crashes the tick",
        "forecaster/reconcile/persisting.py",
        "        state = None if saved is None else ServiceState.from_dict(saved)\n",
        "        state = None\n",
        (
            "tests/faults/test_fail_closed_state.py::test_an_untrusted_state_stops_prewarm_and_says_why",
        ),
    ),
    Mutation(
        "a lost state after an earlier leader starts a fresh budget",
        "forecaster/actuators/coordination/state_store.py",
        "            self._refuse_fresh_start(",
        "            (lambda _: None)(",
        (
            "tests/faults/test_fail_closed_state.py::test_a_lost_state_after_an_earlier_leader_is_refused_with_an_event",
        ),
    ),
    Mutation(
        "no leader before this process is ever seen",
        "forecaster/actuators/coordination/leases.py",
        "    if acquired is None or acquired >= started_at - EARLIER_GRACE_SECONDS:",
        "    if True:",
        (
            "tests/faults/test_fail_closed_state.py::test_a_lost_state_after_an_earlier_leader_is_refused_with_an_event",
        ),
    ),
    Mutation(
        "a replica started with us is taken for an earlier leader",
        "forecaster/actuators/coordination/leases.py",
        "    if acquired is None or acquired >= started_at - EARLIER_GRACE_SECONDS:",
        "    if acquired is None:",
        ("tests/faults/test_fail_closed_state.py::test_a_fresh_install_starts_with_a_fresh_state",),
    ),
    Mutation(
        "a placeholder TTL of years accepted",
        "forecaster/settings/schema.py",
        '        ge=300,\n        le=DAY_SECONDS,\n        description="placeholders',
        '        ge=300,\n        description="placeholders',
        ("tests/test_settings.py::test_hard_bounds_name_the_field",),
    ),
    Mutation(
        "a pool whose Job names Kubernetes refuses is accepted",
        "forecaster/settings/schema.py",
        "        if len(longest) > KUBERNETES_NAME_LIMIT:",
        "        if False:",
        ("tests/test_settings.py::test_hard_bounds_name_the_field",),
    ),
    Mutation(
        "a tick interval longer than half the TTL accepted",
        "forecaster/settings/schema.py",
        "        if self.reconcile_every_seconds >= ttl / 2:",
        "        if False:",
        ("tests/test_settings.py::test_hard_bounds_name_the_field",),
    ),
    Mutation(
        "true taken as the number 1",
        "forecaster/settings/schema.py",
        "        if isinstance(value, bool) and info.field_name is not None:",
        "        if False:",
        ("tests/test_settings.py::test_hard_bounds_name_the_field",),
    ),
    Mutation(
        "a 409 on someone else's Job counted as our placeholder",
        "forecaster/actuators/prewarm/placeholders.py",
        "            self._require_existing_is_ours(name, spec.pool)",
        "            pass",
        (
            "tests/actuators/test_actuation.py::test_a_name_taken_by_a_job_not_ours_is_an_actuation_error_not_prewarm",
        ),
    ),
    Mutation(
        "one NodePool the expiry cannot restore stops the rest",
        "forecaster/app/cleanup.py",
        '        undone.attempt(f"NodePool {name}", restore)',
        "        restore()",
        ("tests/faults/test_expiry_isolation.py",),
    ),
    Mutation(
        "cleanup exits 0 with objects it could not undo",
        "forecaster/cli/oneshot.py",
        '        return 1\n    print(f"cleanup: {changed}")',
        '        return 0\n    print(f"cleanup: {changed}")',
        (
            "tests/faults/test_expiry_isolation.py::test_one_expiry_run_undoes_all_it_can_and_exits_1_naming_the_rest",
        ),
    ),
    Mutation(
        "uninstall withdraws only what the config names",
        "forecaster/actuators/prewarm/placeholder_backend.py",
        "        for job in self.placeholders.jobs(None):\n            name = job",
        '        for job in self.placeholders.jobs("gpu-a"):\n            name = job',
        (
            "tests/faults/test_expiry_isolation.py::test_uninstall_withdraws_a_pool_that_left_the_config",
        ),
    ),
    Mutation(
        "resume does not give back the Lease cleanup holds",
        "forecaster/app/takeover.py",
        "    if release_fence(kube, namespace=namespace, wall=lambda: float(now)):",
        "    if False:",
        ("tests/service/test_cluster_service.py::test_uninstall_cleanup_fences_a_running_leader",),
    ),
    Mutation(
        "a stray sample from 1970 sizes the grid",
        "forecaster/sources/prometheus.py",
        "                window=(first - shift, last - shift),",
        "                window=None,",
        (
            "tests/sources/test_prometheus.py::test_a_sample_stamped_outside_the_window_is_dropped_and_counted",
        ),
    ),
    Mutation(
        "Ctrl-C prints a traceback",
        "forecaster/cli/__init__.py",
        "    except KeyboardInterrupt:\n"
        '        print("forecaster: interrupted", file=sys.stderr)\n'
        "        return 130\n",
        "",
        ("tests/cli/test_interrupt.py::test_ctrl_c_in_the_embedded_default",),
    ),
    Mutation(
        "SIGTERM kills the replica without releasing the Lease",
        "forecaster/cli/__init__.py",
        "        signal.SIGTERM: signal.signal(signal.SIGTERM, _terminated),",
        "",
        ("tests/cli/test_interrupt.py::test_sigterm_releases_the_lease",),
    ),
    Mutation(
        "our placeholders counted as demand",
        "forecaster/sources/prometheus.py",
        '    kube_pod_container_resource_requests{resource="{resource}",{exclude}}\n'
        "  ))\n  * on (namespace, pod) group_left()\n"
        '    max by (namespace, pod) (kube_pod_status_phase{phase=~"Pending|Running"}',
        '    kube_pod_container_resource_requests{resource="{resource}"}\n'
        "  ))\n  * on (namespace, pod) group_left()\n"
        '    max by (namespace, pod) (kube_pod_status_phase{phase=~"Pending|Running"}',
        ("tests/sources/test_prometheus.py",),
    ),
    Mutation(
        "our placeholders counted as arrivals",
        "forecaster/sources/prometheus.py",
        'ARRIVALS_QUERY = """sum(\n'
        "  sum by (namespace, pod) (max by (namespace, pod, container) (\n"
        '    kube_pod_container_resource_requests{resource="{resource}",{exclude}}',
        'ARRIVALS_QUERY = """sum(\n'
        "  sum by (namespace, pod) (max by (namespace, pod, container) (\n"
        '    kube_pod_container_resource_requests{resource="{resource}"}',
        ("tests/sources/test_prometheus.py",),
    ),
    Mutation(
        "our placeholders in the operating point's pod history",
        "forecaster/sources/prometheus.py",
        'kube_pod_nodeselectors{nodeselector_karpenter_sh_nodepool="{pool}",{exclude}}[{window}]',
        'kube_pod_nodeselectors{nodeselector_karpenter_sh_nodepool="{pool}"}[{window}]',
        ("tests/sources/test_prometheus.py",),
    ),
    Mutation(
        "the recording rule counts our placeholders",
        "deploy/base/prometheusrule.yaml",
        ',namespace!~"forecaster|forecaster-placeholders"}))',
        "}))",
        (
            "tests/deploy/test_manifests.py::test_the_demand_recording_rule_counts_what_the_default_query_counts",
        ),
    ),
    Mutation(
        "the daemon may rewrite its own kill switch",
        "deploy/base/rbac.yaml",
        '  - apiGroups: [""]\n    resources: [configmaps]\n    verbs: [get]\n',
        '  - apiGroups: [""]\n    resources: [configmaps]\n    verbs: [get, update]\n',
        (
            "tests/deploy/test_rbac.py::test_each_service_account_holds_exactly_what_its_workload_uses",
        ),
    ),
    Mutation(
        "the expiry job runs as the daemon",
        "deploy/helm/forecaster/templates/_helpers.tpl",
        'serviceAccountName: {{ if has "--expired" .args }}forecaster-expire{{ else }}',
        'serviceAccountName: {{ if has "--expired" .args }}forecaster{{ else }}',
        (
            "tests/deploy/test_rbac.py::test_each_service_account_holds_exactly_what_its_workload_uses",
        ),
    ),
    Mutation(
        "the daemon's own demand export counts our placeholders",
        "forecaster/service/metrics.py",
        "            self.observed_demand.labels(pool=name).set(snapshot.real_demand_gpus)",
        "            self.observed_demand.labels(pool=name).set(\n"
        "                snapshot.real_demand_gpus + snapshot.prewarm_gpus\n            )",
        (
            "tests/sources/test_own_demand.py::test_every_replica_exports_the_real_demand_it_observes",
        ),
    ),
    Mutation(
        "the closed loop: the daemon's own demand export counts our placeholders",
        "forecaster/service/metrics.py",
        "            self.observed_demand.labels(pool=name).set(snapshot.real_demand_gpus)",
        "            self.observed_demand.labels(pool=name).set(\n"
        "                snapshot.real_demand_gpus + snapshot.prewarm_gpus\n            )",
        ("tests/service/test_closed_loop.py::test_demand_read_back_is_the_real_pods_gpus",),
    ),
    Mutation(
        "the closed loop: the daemon's unannounced demand export counts our placeholders",
        "forecaster/service/metrics.py",
        "                snapshot.real_demand_gpus - snapshot.announced_real_gpus\n",
        "                snapshot.real_demand_gpus - snapshot.announced_real_gpus"
        " + snapshot.prewarm_gpus\n",
        ("tests/service/test_closed_loop.py::test_demand_read_back_is_the_real_pods_gpus",),
    ),
    Mutation(
        "the closed loop: the shipped queries count our namespace",
        "forecaster/sources/prometheus.py",
        """    return f'namespace!~"{"|".join(namespaces)}"'""",
        "    return 'namespace!=\"\"'",
        ("tests/service/test_closed_loop.py::test_arrivals_count_only_real_pods",),
    ),
    Mutation(
        "a pod bound mid-window counts its GPUs twice in the pod history",
        "forecaster/sources/prometheus.py",
        '    "gpus": """sum by (namespace, pod) (max by (namespace, pod, container) (\n',
        '    "gpus": """sum by (namespace, pod) ((\n',
        (
            "tests/sources/test_prometheus.py::test_pod_history_has_each_pods_creation_run_time_and_gpus",
        ),
    ),
    Mutation(
        "a pod just bound counts its GPUs twice in the bootstrap demand",
        "forecaster/sources/prometheus.py",
        'BOOTSTRAP_QUERY = """sum(\n'
        "  sum by (namespace, pod) (max by (namespace, pod, container) (",
        'BOOTSTRAP_QUERY = """sum(\n  sum by (namespace, pod) ((',
        (
            "tests/sources/test_prometheus.py::test_default_query_counts_pending_and_running_gpus_per_pool",
        ),
    ),
    Mutation(
        "doctor exits 1 on warnings alone",
        "forecaster/cli/oneshot.py",
        "    return 1 if errors else 0",
        "    return 1 if unique else 0",
        (
            "tests/cli/test_one_shot_imports.py::test_doctor_prints_each_check_once_and_exits_0_on_warnings",
        ),
    ),
    Mutation(
        "the one-shot commands go through the model-loading dispatcher",
        "forecaster/cli/__init__.py",
        "        if args.command in oneshot.ONE_SHOT:",
        "        if args.command == 'pause':",
        ("tests/cli/test_one_shot_imports.py::test_one_shot_commands_load_no_model_library",),
    ),
    Mutation(
        "the page's prewarm chart keeps a time axis of its own",
        "forecaster/service/page.py",
        '  plot("held", {ytitle: "GPUs", xrange: xrange, lines: [',
        '  plot("held", {ytitle: "GPUs", lines: [',
        ("tests/service/test_page_browser.py::test_the_page_reads_at_a_glance",),
    ),
    Mutation(
        "replay workers forward the per-tick lines the caller quieted",
        "forecaster/simulation/workers.py",
        "        initargs=(records, root.level, _levels()),",
        "        initargs=(records, root.level),",
        (
            "tests/simulation/test_workers.py::test_a_logger_the_caller_quieted_stays_quiet_in_the_workers",
        ),
    ),
    Mutation(
        "replicas' exports of the same demand are added up",
        "forecaster/sources/prometheus.py",
        "    'max(forecaster_observed_unannounced_demand_gpus{pool=\"{pool}\"})'",
        "    'sum(forecaster_observed_unannounced_demand_gpus{pool=\"{pool}\"})'",
        (
            "tests/sources/test_own_demand.py::test_default_metrics_and_the_own_export_read_the_real_demand",
        ),
    ),
    Mutation(
        "announced work is counted twice: in the forecast's history and as known work",
        "forecaster/sources/prometheus.py",
        '  unless on (namespace, pod) ANNOUNCED_PODS\n)""".replace',
        '\n)""".replace',
        (
            "tests/sources/test_announced_history.py::test_a_cronjobs_runs_are_read_out_of_the_history_and_prewarmed_once_from_notice",
        ),
    ),
    Mutation(
        "the recording rule keeps JobSets' pods in the history",
        "deploy/base/prometheusrule.yaml",
        'kube_job_owner{owner_kind=~"CronJob|JobSet"}',
        'kube_job_owner{owner_kind=~"CronJob"}',
        (
            "tests/deploy/test_manifests.py::test_the_demand_recording_rule_counts_what_the_default_query_counts",
        ),
    ),
    Mutation(
        "the daemon exports announced work as unannounced demand",
        "forecaster/actuators/observe/pod_tally.py",
        "    tally.of_announced += gpus if is_announced else 0",
        "    tally.of_announced += 0",
        (
            "tests/actuators/test_notice_cronjobs.py::test_the_daemon_prewarms_an_announced_run_once_and_drops_it_when_its_job_exists",
        ),
    ),
    Mutation(
        "announced pods are counted as new arrivals",
        "forecaster/actuators/observe/pod_tally.py",
        "age < window and uid in self.unannounced)",
        "age < window)",
        (
            "tests/actuators/test_notice_cronjobs.py::test_the_daemon_prewarms_an_announced_run_once_and_drops_it_when_its_job_exists",
        ),
    ),
    Mutation(
        "any Job's pods in a CronJob's namespace count as its runs",
        "forecaster/actuators/notice/cronjobs.py",
        "                if run and (namespace, base) in crons:",
        "                if run:",
        (
            "tests/actuators/test_notice_cronjobs.py::test_the_pods_of_a_runs_job_are_marked_as_announced_work",
        ),
    ),
    Mutation(
        "a JobSet's first stage (no notice) is left out of the history",
        "forecaster/actuators/notice/jobsets.py",
        '            if isinstance(r, dict) and r.get("dependsOn")',
        "            if isinstance(r, dict)",
        (
            "tests/actuators/test_notice_jobsets.py::test_only_the_pods_of_a_waiting_stage_are_marked_as_announced_work",
        ),
    ),
    Mutation(
        "announced work is planned as the larger of it and the forecast, not on top",
        "forecaster/core/planner.py",
        "    return float(announced) + max(forecast.upper_gpus, unannounced_now)",
        "    return max(forecast.upper_gpus, float(snap.real_demand_gpus + announced + reserved))",
        (
            "tests/core/test_notice.py::test_announced_work_is_added_to_the_forecast_of_the_rest_once",
        ),
    ),
    Mutation(
        "an item announced too late to prewarm counts as notice ahead of the lead time",
        "forecaster/core/notice.py",
        "ahead=came and notice >= window,",
        "ahead=came,",
        (
            "tests/core/test_notice.py::test_the_notice_each_item_came_with_is_measured_against_the_pools_window",
        ),
    ),
    Mutation(
        "a quiet tick counts the last tick's arrived announced work again",
        "forecaster/reconcile/quiet.py",
        "        notice_ended=(),  # nothing was followed",
        "        # nothing was followed",
        (
            "tests/actuators/test_notice_cronjobs.py::test_the_daemon_prewarms_an_announced_run_once_and_drops_it_when_its_job_exists",
        ),
    ),
    Mutation(
        "the arrivals model rises from all pods now, announced work's too (counted twice)",
        "forecaster/reconcile/forecast.py",
        "        snapshot.real_demand_gpus - snapshot.announced_real_gpus,",
        "        snapshot.real_demand_gpus,",
        (
            "tests/reconcile/test_arrivals_path.py::test_the_rise_is_of_unannounced_work_and_announced_work_is_added_once",
        ),
    ),
    Mutation(
        "the error budget judges announced work against a history that leaves it out",
        "forecaster/reconcile/scoring.py",
        "    return dataclasses.replace(demand, upper_gpus=planned - known)",
        "    return dataclasses.replace(demand, upper_gpus=planned)",
        (
            "tests/reconcile/test_arrivals_path.py::test_the_rise_is_of_unannounced_work_and_announced_work_is_added_once",
        ),
    ),
    Mutation(
        "a restart trusts again a notice source that announced work that never came",
        "forecaster/reconcile/loop.py",
        "            self.notice_ledger.restore(saved.notice, saved.notice_in_flight,"
        " saved.notice_use)\n",
        "",
        (
            "tests/actuators/test_notice_cronjobs.py::test_runs_that_never_come_cut_the_source_and_runs_that_come_restore_it",
        ),
    ),
    Mutation(
        "a second pause overwrites the first incident's reason",
        "forecaster/cli/oneshot.py",
        "        if earlier is not None and not args.force:",
        "        if False:",
        (
            "tests/service/test_kill_switch.py::test_pause_withdraws_everything_in_one_tick_then_writes_nothing",
        ),
    ),
    Mutation(
        "the chart's values schema drifts from the config's",
        "forecaster/settings/schema.py",
        '    gpus_per_node: int = Field(8, gt=0, le=128, description="units of resource per node")',
        '    gpus_per_node: int = Field(8, gt=0, le=256, description="units of resource per node")',
        ("tests/deploy/test_helm.py::test_the_values_schema_follows_the_config_schema",),
    ),
    Mutation(
        "Prometheus' default retention read as 0s",
        "forecaster/sources/prometheus.py",
        '        if value in ("", "0s"):',
        "        if False:",
        ("tests/sources/test_check_query.py::test_the_default_retention_is_read_as_15_days",),
    ),
    Mutation(
        "the pods of one Job are not one gang in a pool's history",
        "forecaster/core/jobs.py",
        "        if gang is not None and pod.created - gang[0].created <= step_seconds:",
        "        if False:",
        (
            "tests/cli/test_history_replay.py::test_the_export_gives_back_the_traces_jobs_gangs_whole",
        ),
    ),
    Mutation(
        "a history shorter than a replay needs is replayed anyway",
        "forecaster/app/history.py",
        "    if days < least.days:",
        "    if False:",
        ("tests/cli/test_history_replay.py::test_a_history_too_short_is_refused_in_one_line",),
    ),
    Mutation(
        "a crashing tick counts as progress (a crash-looping leader keeps its Lease)",
        "forecaster/service/daemon.py",
        '            self.metrics.errors.labels(kind="crash").inc()\n            return None',
        '            self.metrics.errors.labels(kind="crash").inc()\n'
        "            self._progress_at = self.monotonic()\n            return None",
        (
            "tests/service/test_cluster_service.py::test_a_crash_looping_leader_is_stuck_not_making_progress",
        ),
    ),
    Mutation(
        "a kill switch written as True is ignored",
        "forecaster/actuators/coordination/control.py",
        'if str(data.get(PAUSED, "")).strip().lower() != "true":',
        'if str(data.get(PAUSED, "")).strip() != "true":',
        (
            "tests/service/test_kill_switch.py::test_the_kill_switch_reads_true_however_it_is_written",
        ),
    ),
    Mutation(
        "a placeholder past its TTL stays while its Job has not ended",
        "forecaster/actuators/prewarm/placeholders.py",
        "            if ended is not None or age >= spec.ttl_seconds:",
        "            if ended is not None and age >= spec.ttl_seconds:",
        (
            "tests/actuators/test_placeholder_lifecycle.py::test_a_placeholder_past_its_ttl_goes_even_if_its_job_has_not_ended",
        ),
    ),
    Mutation(
        "a look-alike placeholder (our role label, not our managed-by) is not counted as demand",
        "forecaster/actuators/observe/pod_tally.py",
        "        pod_labels.get(lbl.MANAGED_BY) == lbl.MANAGER\n        and pod_labels",
        "        pod_labels.get(lbl.MANAGED_BY) == lbl.MANAGER\n        or pod_labels",
        (
            "tests/actuators/test_observer_accounting.py::test_a_look_alike_placeholder_is_real_demand",
        ),
    ),
    Mutation(
        "the cleanup fence waits our default lease duration, not the holder's",
        "forecaster/actuators/coordination/leases.py",
        'wait = int(spec.get("leaseDurationSeconds") or LEASE_SECONDS)',
        "wait = LEASE_SECONDS",
        (
            "tests/actuators/test_leases.py::test_the_fence_waits_the_holders_own_duration_and_retries_a_racing_renewal",
        ),
    ),
    Mutation(
        "Ctrl-C in a parallel sweep throws away the replays that finished",
        "forecaster/simulation/workers.py",
        "        raise Interrupted(finished) from None\n    finally:",
        "        raise Interrupted({}) from None\n    finally:",
        ("tests/cli/test_replay_interrupt.py::test_ctrl_c_writes_what_finished_and_exits_130",),
    ),
    Mutation(
        "the tick that withdraws on the kill switch charges nothing for what it held",
        "forecaster/reconcile/loop.py",
        "        if halted and not held:",
        "        if halted and held:",
        (
            "tests/service/test_kill_switch.py::test_pause_withdraws_everything_in_one_tick_then_writes_nothing",
        ),
    ),
    Mutation(
        "a stopped live run misdates when its placeholders end",
        "forecaster/actuators/prewarm/placeholder_backend.py",
        'ends = created + int(job["spec"].get("activeDeadlineSeconds") or 0)',
        'ends = created - int(job["spec"].get("activeDeadlineSeconds") or 0)',
        (
            "tests/app/test_cleanup_report.py::test_placeholders_are_summed_per_pool_and_end_at_creation_plus_deadline",
        ),
    ),
    Mutation(
        "the GPU-hours cap charges the commitment in whole hours",
        "forecaster/core/planner.py",
        "commitment_hours = budgets.commitment_seconds / 3600",
        "commitment_hours = budgets.commitment_seconds // 3600",
        ("tests/core/test_planner_bounds.py::test_the_commitment_is_charged_in_hours",),
    ),
    Mutation(
        "the NodePool limit counts our own placeholders' nodes as others' work",
        "forecaster/core/planner.py",
        "in_use = snap.allocatable_gpus + snap.launching_gpus - snap.prewarm_gpus",
        "in_use = snap.allocatable_gpus + snap.launching_gpus",
        (
            "tests/core/test_planner_bounds.py::test_the_nodepool_limit_counts_launching_nodes_and_not_our_own_placeholders",
        ),
    ),
    Mutation(
        "extending a NodePool pause records the paused values as the original",
        "forecaster/actuators/nodepools.py",
        'original = record["original"]',
        "original = current",
        (
            "tests/actuators/test_nodepool_records.py::test_a_pause_is_extended_once_less_than_half_its_period_is_left_keeping_the_original",
        ),
    ),
    Mutation(
        "a NodePool record with a damaged part is trusted",
        "forecaster/actuators/nodepools.py",
        "isinstance(record.get(part), dict) and set(record[part]) == set(FIELDS)",
        "isinstance(record.get(part), dict)",
        (
            "tests/actuators/test_nodepool_records.py::test_a_damaged_record_is_refused_and_nothing_is_written",
        ),
    ),
    Mutation(
        "a failed NodePool protection is followed by that pool's prewarm",
        "forecaster/actuators/actuator.py",
        "            if pool in report.errors:\n                continue",
        "            if False:\n                continue",
        (
            "tests/actuators/test_actuator_gate.py::test_a_failed_protection_stops_that_pools_prewarm_and_not_the_others",
        ),
    ),
    Mutation(
        "a backend switch leaves the other backend's prewarm held",
        "forecaster/actuators/actuator.py",
        "        if self._backends.get(name) != choice.backend:",
        "        if False:",
        (
            "tests/actuators/test_actuator_gate.py::test_the_first_tick_empties_the_other_backend_and_later_ticks_leave_it",
        ),
    ),
    Mutation(
        "what a backend's withdrawal ended goes uncharged",
        "forecaster/actuators/actuator.py",
        "                if withdrawn:",
        "                if False:",
        (
            "tests/actuators/test_actuator_gate.py::test_the_first_tick_empties_the_other_backend_and_later_ticks_leave_it",
        ),
    ),
    Mutation(
        "what a registered backend holds with no pod is not our prewarm",
        "forecaster/actuators/observe/observer.py",
        "prewarm_held_gpus=sum(gpus.get(pool, 0) for gpus in backend_held),",
        "prewarm_held_gpus=0,",
        (
            "tests/seams/test_toy_backend.py::test_the_daemon_prewarms_with_it_and_counts_what_it_holds",
        ),
    ),
    Mutation(
        "uninstall skips the backends the cluster serves",
        "forecaster/app/cleanup.py",
        "    _each(undone, backends, lambda backend: backend.uninstall(undone))",
        "    _each(undone, {}, lambda backend: backend.uninstall(undone))",
        (
            "tests/seams/test_toy_backend.py::test_doctor_lists_it_and_cleanup_and_expiry_withdraw_it_without_a_config",
        ),
    ),
    Mutation(
        "one bad hour cuts a notice source (no day below 0.5 needed)",
        "forecaster/core/notice.py",
        "DISTRUST_AFTER_SECONDS = 86400\n",
        "DISTRUST_AFTER_SECONDS = 0\n",
        (
            "tests/core/test_notice.py::test_below_half_precision_for_a_day_a_source_is_cut_and_restored_when_it_recovers",
        ),
    ),
    Mutation(
        "a source below 0.5 now is cut though it was trusted earlier in the day",
        "forecaster/core/notice.py",
        "        if bool(below.all()):",
        "        if bool(below[-1]):",
        (
            "tests/core/test_notice.py::test_below_half_precision_for_a_day_a_source_is_cut_and_restored_when_it_recovers",
        ),
    ),
    Mutation(
        "a restart forgets the announced items in flight (notice and held prewarm restart at 0)",
        "forecaster/core/notice.py",
        "        self._open = {(f.item.pool, f.item.key): f for f in in_flight}",
        "        self._open = {}",
        (
            "tests/core/test_notice.py::test_an_item_in_flight_at_a_restart_keeps_its_first_reading_and_its_held_prewarm",
        ),
    ),
    Mutation(
        "an admitted Kueue workload is still announced (its pods are counted twice)",
        "forecaster/actuators/notice/kueue_reserved.py",
        ' or condition_true(obj, "Admitted"):',
        ":",
        (
            "tests/actuators/test_notice_kueue.py::test_a_workload_holding_quota_is_announced_on_its_flavors_pool",
        ),
    ),
    Mutation(
        "Kueue work stuck in its checks or queue is expected for ever (not withdrawn, not charged)",
        "forecaster/actuators/notice/kueue_reserved.py",
        "        latest_start=earliest + context.grace_seconds,",
        "        latest_start=earliest + 10**9,",
        (
            "tests/actuators/test_notice_kueue.py::test_a_workload_stuck_in_its_checks_is_withdrawn_and_charged",
            "tests/actuators/test_notice_kueue_pending.py::test_pending_work_that_does_not_come_is_withdrawn_and_charged",
        ),
    ),
    Mutation(
        "items whose pods stay in the histories are added on top of the forecast (counted twice)",
        "forecaster/core/planner.py",
        "    return snap.announced_real_gpus + sum(i.gpus for i in due if not i.in_history)",
        "    return snap.announced_real_gpus + sum(i.gpus for i in due)",
        (
            "tests/core/test_notice.py::test_work_whose_pods_stay_in_the_histories_floors_the_forecast_not_adds_to_it",
        ),
    ),
    Mutation(
        "an Argo step after a failed one is announced (prewarm for work that will not run)",
        "forecaster/actuators/notice/argo.py",
        "        if phase in FAILED:\n            return None\n",
        "",
        (
            "tests/actuators/test_notice_argo.py::test_an_upstream_done_makes_the_step_due_now_and_one_failed_announces_nothing",
        ),
    ),
    Mutation(
        "an Argo upstream without an estimate makes its step due now at every reading",
        "forecaster/actuators/notice/argo.py",
        "        else:\n            return None\n    return max(ends, default=now)",
        "    return max(ends, default=now)",
        (
            "tests/actuators/test_notice_argo.py::test_an_upstream_without_an_estimate_announces_nothing_until_it_is_done",
        ),
    ),
    Mutation(
        "the pods of an Argo workflow's first steps are marked as announced (left out of history)",
        "forecaster/actuators/notice/argo.py",
        "            if isinstance(task, dict) and _dependencies(task):",
        "            if isinstance(task, dict):",
        ("tests/actuators/test_notice_argo.py::test_only_the_pods_of_waiting_steps_are_marked",),
    ),
    Mutation(
        "a CronWorkflow forbidding a second run announces one while a run is active",
        "forecaster/actuators/notice/cronworkflows.py",
        'spec.get("concurrencyPolicy", "Allow") in ("Forbid", "Replace"):\n            return []\n'
        '        last = status.get("lastScheduledTime")',
        'spec.get("concurrencyPolicy", "Allow") in ("Replace",):\n            return []\n'
        '        last = status.get("lastScheduledTime")',
        (
            "tests/actuators/test_notice_argo.py::test_a_suspended_cronworkflow_or_one_forbidding_a_second_run_announces_nothing",
        ),
    ),
    Mutation(
        "a cron run announces its later steps too (announced twice: by the cron and the workflow)",
        "forecaster/actuators/notice/cronworkflows.py",
        '        return [t for t in tasks if not t.get("dependencies") and not t.get("depends")]',
        "        return list(tasks)",
        (
            "tests/actuators/test_notice_argo.py::test_a_cronworkflows_next_run_announces_its_first_gpu_steps",
        ),
    ),
    Mutation(
        "pods with DRA claims go unreported (silently not prewarmed)",
        "forecaster/actuators/observe/observer.py",
        "    snapshots.claimed = claimed_pods(pods, node_pool=node_pool, shapes=shapes)\n",
        "",
        (
            "tests/actuators/test_dra_claims.py::test_dra_pods_are_reported_per_namespace_and_pool_and_never_prewarmed",
        ),
    ),
    Mutation(
        "a notice source not installed is asked again every tick (a 404 per tick per source)",
        "forecaster/actuators/notice/base.py",
        "                self._absent_until[status.source] = now + RECHECK_ABSENT_SECONDS",
        "                pass",
        (
            "tests/actuators/test_notice_argo.py::test_a_source_not_installed_is_asked_again_only_every_ten_minutes",
        ),
    ),
    Mutation(
        "Ctrl-C in a sweep terminates the caller's own child processes too",
        "forecaster/simulation/workers.py",
        "            for child in set(multiprocessing.active_children()) - others:",
        "            for child in set(multiprocessing.active_children()):",
        (
            "tests/simulation/test_workers.py::test_ctrl_c_stops_the_pools_workers_and_leaves_the_callers_own_children_alone",
        ),
    ),
    Mutation(
        "a MIG, AMD or Neuron pool's placeholders request whole NVIDIA GPUs",
        "forecaster/actuators/prewarm/placeholders.py",
        '            "requests": {spec.resource: str(spec.gpus), "cpu": "10m", "memory": "16Mi"},',
        '            "requests": {GPU: str(spec.gpus), "cpu": "10m", "memory": "16Mi"},',
        (
            "tests/actuators/test_accelerators.py::test_each_pool_counts_plans_and_prewarms_in_its_own_resource",
        ),
    ),
    Mutation(
        "a pool's placeholders are built without its resource",
        "forecaster/app/build.py",
        "        resource=pool.resource,\n        ttl_seconds",
        "        ttl_seconds",
        (
            "tests/actuators/test_accelerators.py::test_each_pool_counts_plans_and_prewarms_in_its_own_resource",
        ),
    ),
    Mutation(
        "a pool's demand is counted in NVIDIA GPUs whatever its resource",
        "forecaster/actuators/observe/pod_tally.py",
        "            pod_gpus(pod, resource), node_units=node_units",
        "            pod_gpus(pod), node_units=node_units",
        (
            "tests/actuators/test_accelerators.py::test_each_pool_counts_plans_and_prewarms_in_its_own_resource",
        ),
    ),
    Mutation(
        "a pool's NodePool limit is read on nvidia.com/gpu whatever its resource",
        "forecaster/actuators/observe/observer.py",
        "    paused_until, limit = _nodepool_facts(kube.get_nodepool(pool), resource)",
        '    paused_until, limit = _nodepool_facts(kube.get_nodepool(pool), "nvidia.com/gpu")',
        (
            "tests/actuators/test_accelerators.py::test_each_pool_counts_plans_and_prewarms_in_its_own_resource",
        ),
    ),
    Mutation(
        "the queries read nvidia_com_gpu whatever the pool's resource (the closed loop on MIG)",
        "forecaster/sources/prometheus.py",
        '        .replace("{resource}", metric_label(resource))',
        '        .replace("{resource}", "nvidia_com_gpu")',
        (
            "tests/cli/test_history_replay.py::test_a_mig_pools_history_is_read_in_its_slices_and_replays_as_a_gpu_pools",
        ),
    ),
    Mutation(
        "notice items of a MIG/AMD/Neuron template are counted in NVIDIA GPUs",
        "forecaster/actuators/notice/base.py",
        "        per_pod = self.fits(pool, pod_gpus(template, self.resource_of(pool)))",
        "        per_pod = self.fits(pool, pod_gpus(template))",
        ("tests/actuators/test_accelerators.py",),
    ),
    Mutation(
        "Kueue's pending work is due when running work was admitted, not when it must end",
        "forecaster/actuators/notice/kueue_pending.py",
        "            started + float(limit)\n",
        "            started\n",
        (
            "tests/actuators/test_notice_kueue_pending.py::test_the_head_of_the_queue_is_due_when_running_work_must_free_its_quota",
        ),
    ),
    Mutation(
        "running work with no time limit is timed by every run seen, not the longer ones",
        "forecaster/actuators/notice/kueue_pending.py",
        "    longer = sorted(d for d in durations if started + d > now)",
        "    longer = sorted(durations)",
        (
            "tests/actuators/test_notice_kueue_pending.py::test_without_a_time_limit_running_work_is_timed_by_the_runs_seen_before",
        ),
    ),
    Mutation(
        "running work is timed by too few runs seen before",
        "forecaster/actuators/notice/kueue_pending.py",
        "    if len(longer) < MIN_RUNS_SEEN:",
        "    if not longer:",
        (
            "tests/actuators/test_notice_kueue_pending.py::test_without_a_time_limit_running_work_is_timed_by_the_runs_seen_before",
        ),
    ),
    Mutation(
        "a pool's history the daemon never measured ignores Karpenter's lead",
        "forecaster/sources/prometheus.py",
        "            return self.karpenter_lead(start=start, end=end)",
        "            return None",
        (
            "tests/cli/test_history_replay.py::test_without_the_daemons_lead_karpenters_provisioning_histograms_give_it",
        ),
    ),
    Mutation(
        "the live burst rule prewarms every GPU just created whatever its alpha",
        "forecaster/forecasting/burst.py",
        "        return max(0.0, floor + self.alpha * created)",
        "        return max(0.0, floor + created)",
        (
            "tests/actuators/test_burst_live.py::test_the_burst_rule_prewarms_what_was_just_created_in_whole_nodes_under_the_cap",
        ),
    ),
    Mutation(
        "a burst pool is trained as a predictive one",
        "forecaster/app/build.py",
        '        burst_alpha=pool.burst_alpha if pool.policy == "burst" else None,',
        "        burst_alpha=None,",
        (
            "tests/actuators/test_burst_live.py::test_the_training_job_publishes_the_rule_for_a_burst_pool",
        ),
    ),
    Mutation(
        "the verdict judges the forecast only, never the burst rule",
        "forecaster/simulation/verdict.py",
        'FAMILIES = (("predictive", "chosen"), ("burst", "chosen_burst"))',
        'FAMILIES = (("predictive", "chosen"),)',
        (
            "tests/simulation/test_verdict.py::test_the_burst_rule_is_recommended_where_it_qualifies_and_the_forecast_does_not",
        ),
    ),
    Mutation(
        "of two qualifying families the verdict takes the first, not the better",
        "forecaster/simulation/verdict.py",
        "min(winners, key=lambda v: _geometric_mean(v.ratios))",
        "winners[0]",
        (
            "tests/simulation/test_verdict.py::test_where_both_families_qualify_the_lower_geometric_mean_of_ratios_wins",
        ),
    ),
    Mutation(
        "the frontier's larger floors are cut by the smallest budget, not the largest",
        "forecaster/simulation/frontier.py",
        "            budget_percent=max(BUDGETS_PERCENT),",
        "            budget_percent=min(BUDGETS_PERCENT),",
        (
            "tests/simulation/test_frontier.py::test_a_larger_floor_is_replayed_only_while_the_last_kept_within_the_largest_budget",
        ),
    ),
    Mutation(
        "a floor finished before reactive's GPU-hours are known is never followed",
        "forecaster/simulation/frontier.py",
        "sorted(self.waiting) if (run",
        "sorted(self.waiting)[-1:] if (run",
        (
            "tests/simulation/test_frontier.py::test_a_larger_floor_is_replayed_only_while_the_last_kept_within_the_largest_budget",
        ),
    ),
    Mutation(
        "a task added by follow is never run in the workers",
        "forecaster/simulation/workers.py",
        "heapq.heappush(waiting, (rank(tasks[index]), index))",
        "pass",
        (
            "tests/simulation/test_workers.py::test_a_finished_task_may_add_the_next_and_its_result_comes_after_those_given",
        ),
    ),
    Mutation(
        "replay's burst-live retrains the arrivals model, not the burst rule",
        "forecaster/app/build_replay.py",
        "        burst_alpha=setup.burst_alpha,\n",
        "",
        (
            "tests/simulation/test_burst_live_replay.py::test_burst_live_runs_the_daemons_loop_with_the_rule_refitted_weekly",
        ),
    ),
    Mutation(
        "a burst point measured outside the daemon's loop is recommended",
        "forecaster/simulation/verdict.py",
        'if v.recommend == "forecaster" and v.live]',
        'if v.recommend == "forecaster"]',
        (
            "tests/simulation/test_verdict.py::test_a_burst_point_measured_outside_the_daemons_loop_is_said_not_recommended",
        ),
    ),
    Mutation(
        "the workers start tasks in the order given, not by rank",
        "forecaster/simulation/workers.py",
        "_, index = heapq.heappop(waiting)",
        "_, index = waiting.pop(waiting.index(min(waiting, key=lambda w: w[1])))",
        ("tests/simulation/test_workers.py::test_tasks_start_by_rank_and_so_do_those_follow_adds",),
    ),
    Mutation(
        "a run added by follow waits behind every run not started yet",
        "forecaster/simulation/workers.py",
        "heapq.heappush(waiting, (rank(tasks[index]), index))",
        "heapq.heappush(waiting, (9, index))",
        ("tests/simulation/test_workers.py::test_tasks_start_by_rank_and_so_do_those_follow_adds",),
    ),
    Mutation(
        "the twin's history re-read within a minute is another minute's",
        "forecaster/simulation/live.py",
        "key = (first, values.size, kept, step_seconds)",
        "key = (first, step_seconds)",
        (
            "tests/simulation/test_replay.py::test_the_twins_history_read_once_a_minute_is_what_a_fresh_read_gives",
        ),
    ),
    Mutation(
        "the burst rule is replayed in the loop whether or not its point qualifies",
        "forecaster/simulation/frontier.py",
        'and family_verdict(document, budget, point).recommend == "forecaster":',
        "and True:",
        (
            "tests/simulation/test_frontier.py::test_the_burst_rule_is_replayed_in_the_loop_only_where_its_point_qualifies",
        ),
    ),
    Mutation(
        "a burst point over its budget in the loop is recommendable",
        "forecaster/simulation/frontier.py",
        "            if not within_budget(",
        "            if False and not within_budget(",
        (
            "tests/simulation/test_frontier.py::test_the_burst_rule_is_replayed_in_the_loop_only_where_its_point_qualifies",
        ),
    ),
    Mutation(
        "a burst point is judged on the rule's figures though the loop's exist",
        "forecaster/simulation/verdict.py",
        'if family == "burst" and live is not None:',
        'if family == "burst" and live is not None and False:',
        (
            "tests/simulation/test_verdict.py::test_a_burst_point_is_judged_on_its_figures_in_the_daemons_loop",
        ),
    ),
    Mutation(
        "Ctrl-C in the static extension forgets the sweep that finished",
        "forecaster/simulation/frontier.py",
        "raise FrontierInterrupted(_kept(partial(runs, stop.finished), before)) from None",
        "raise FrontierInterrupted(partial(runs, stop.finished)) from None",
        (
            "tests/simulation/test_frontier.py::test_ctrl_c_in_the_static_extension_keeps_the_sweep_that_finished",
        ),
    ),
    Mutation(
        "an announced item that came is not linked to its pods: their GPU-hours lose its notice",
        "forecaster/core/notice.py",
        "self.use.came(pool, held.item.key, ahead=notice >= window, at=now)",
        "pass",
        (
            "tests/core/test_notice_use.py::test_pods_count_their_gpu_hours_with_the_notice_their_item_gave",
            "tests/actuators/test_notice_gpu_hours.py::test_the_gpu_hours_of_a_run_announced_ahead_are_reported_per_pool_and_source",
        ),
    ),
    Mutation(
        "pods of an item announced too late count as announced ahead",
        "forecaster/core/notice.py",
        "self.use.came(pool, held.item.key, ahead=notice >= window, at=now)",
        "self.use.came(pool, held.item.key, ahead=True, at=now)",
        (
            "tests/core/test_notice_use.py::test_pods_count_their_gpu_hours_with_the_notice_their_item_gave",
        ),
    ),
    Mutation(
        "a daemon down for a day counts its last reading's GPUs for the whole gap",
        "forecaster/core/notice_use.py",
        "step = min(max(0, now - last.at), MAX_STEP_SECONDS)",
        "step = max(0, now - last.at)",
        (
            "tests/core/test_notice_use.py::test_a_gap_longer_than_a_step_is_not_counted_and_old_days_leave_the_window",
        ),
    ),
    Mutation(
        "a long run's link is forgotten a day after it came though its pods still run",
        "forecaster/core/notice_use.py",
        "                self.links[(pool, key)] = (link[0], now)",
        "                pass",
        (
            "tests/core/test_notice_use.py::test_a_link_lasts_while_its_pods_run_and_a_restart_keeps_links_and_totals",
        ),
    ),
    Mutation(
        "pending pods of announced work count as GPU-hours run",
        "forecaster/actuators/observe/pod_tally.py",
        "    if node_name:\n        tally.running += gpus\n        tally.busy.add(node_name)\n"
        "        if announcement is not None:\n",
        "    if announcement is not None:\n        tally.running_announced[announcement] = 8\n"
        "    if node_name:\n        tally.running += gpus\n        tally.busy.add(node_name)\n"
        "        if False:\n",
        (
            "tests/actuators/test_notice_gpu_hours.py::test_the_gpu_hours_of_a_run_announced_ahead_are_reported_per_pool_and_source",
        ),
    ),
    Mutation(
        "a run's pods are linked to an item that is not their run's",
        "forecaster/actuators/notice/cronjobs.py",
        'return f"cronjob {namespace}/{base}@{kube_timestamp(int(minutes) * 60)}"',
        'return f"cronjob {namespace}/{base}@{kube_timestamp(int(minutes))}"',
        (
            "tests/actuators/test_notice_cronjobs.py::test_a_runs_pods_are_linked_to_the_item_announced_for_that_run",
            "tests/actuators/test_notice_gpu_hours.py::test_the_gpu_hours_of_a_run_announced_ahead_are_reported_per_pool_and_source",
        ),
    ),
    Mutation(
        "a scale-down frees a node still pulling before a warm one",
        "forecaster/actuators/prewarm/placeholders.py",
        "                    _WARM if running else _PULLING",
        "                    _PULLING",
        (
            "tests/actuators/test_placeholder_lifecycle.py::test_a_scale_down_frees_unbound_then_warm_nodes_before_nodes_still_pulling",
        ),
    ),
    Mutation(
        "a scale-down frees the youngest warm placeholder, not the oldest",
        "forecaster/actuators/prewarm/placeholders.py",
        "    return at, created if at == _WARM else -created",
        "    return at, -created",
        (
            "tests/actuators/test_placeholder_lifecycle.py::test_a_scale_down_takes_the_oldest_running_first",
        ),
    ),
    Mutation(
        "the twin's scale-down frees a node still pulling before a warm one",
        "forecaster/simulation/twin.py",
        "        if not pulls or self.nodes[placeholder.node].pulled_at <= self.now:",
        "        if not pulls:",
        (
            "tests/simulation/test_twin.py::test_a_scale_down_frees_the_warm_node_not_the_one_still_pulling",
        ),
    ),
    Mutation(
        "a placeholder whose node is launching is deleted at the next scale-down",
        "forecaster/core/planner.py",
        "    if not flying or kept <= needed:",
        "    if True:",
        (
            "tests/core/test_planner.py::test_placeholders_whose_nodes_are_launching_are_kept_until_the_nodes_are_up",
            "tests/simulation/test_twin.py::test_a_placeholder_whose_node_is_launching_is_kept_so_the_node_comes_up_warm",
        ),
    ),
    Mutation(
        "a launching node a real pod waits for is counted as our placeholder's",
        "forecaster/core/cluster.py",
        "        unclaimed = max(0, self.launching_gpus - self.pending_gpus)",
        "        unclaimed = self.launching_gpus",
        (
            "tests/core/test_planner.py::test_placeholders_whose_nodes_are_launching_are_kept_until_the_nodes_are_up",
        ),
    ),
    Mutation(
        "a handed-off pool drops the announced work it was told of",
        "forecaster/core/planner.py",
        "    gpus = sum(i.gpus for i in due if not i.in_history)\n    wanted",
        "    gpus = 0\n    wanted",
        (
            "tests/core/test_notice.py::test_a_handed_off_pool_still_covers_trusted_announced_work_and_only_that",
        ),
    ),
    Mutation(
        "a handed-off pool prewarms a distrusted source's work",
        "forecaster/core/planner.py",
        "    due = _trusted_due(snap, window_seconds=item.window_seconds,"
        " distrusted=item.distrusted)\n    gpus",
        "    due = _trusted_due(snap, window_seconds=item.window_seconds, distrusted={})\n    gpus",
        (
            "tests/core/test_notice.py::test_a_handed_off_pool_still_covers_trusted_announced_work_and_only_that",
        ),
    ),
    Mutation(
        "a handed-off pool escapes the shared budgets",
        "forecaster/core/planner.py",
        "    sharing = (Mode.PREDICTIVE, Mode.HANDED_OFF, Mode.RECOVERING)",
        "    sharing = (Mode.PREDICTIVE,)",
        (
            "tests/core/test_notice.py::test_a_handed_off_pool_still_covers_trusted_announced_work_and_only_that",
        ),
    ),
    Mutation(
        "a JobSet stage is due only after its upstream's slowest earlier run",
        "forecaster/actuators/notice/jobsets.py",
        "    soonest, slowest = min(mine) + min(before), min(mine) + max(before)",
        "    soonest, slowest = min(mine) + max(before), min(mine) + max(before)",
        ("tests/actuators/test_notice_jobsets.py::test_the_upstreams_earlier_runs_set_the_eta",),
    ),
    Mutation(
        "a JobSet stage slower than its fastest earlier run counts as not coming",
        "forecaster/actuators/notice/jobsets.py",
        "    soonest, slowest = min(mine) + min(before), min(mine) + max(before)",
        "    soonest, slowest = min(mine) + min(before), min(mine) + min(before)",
        ("tests/actuators/test_notice_jobsets.py::test_the_upstreams_earlier_runs_set_the_eta",),
    ),
    Mutation(
        "a pending workload no timed quota covers is announced anyway",
        "forecaster/actuators/notice/kueue_pending.py",
        "        if free < need:\n            break",
        "        if False:\n            break",
        (
            "tests/actuators/test_notice_kueue_pending.py::test_the_head_of_the_queue_is_due_when_running_work_must_free_its_quota",
        ),
    ),
    Mutation(
        "an admitted pending workload takes no quota from those behind it",
        "forecaster/actuators/notice/kueue_pending.py",
        "        free -= need\n",
        "",
        (
            "tests/actuators/test_notice_kueue_pending.py::test_the_head_of_the_queue_is_due_when_running_work_must_free_its_quota",
        ),
    ),
    Mutation(
        "a Volcano gang its Queue cannot take whole is prewarmed anyway",
        "forecaster/actuators/notice/volcano.py",
        "        if units <= 0 or units > _room(obj, resource, context):",
        "        if units <= 0:",
        (
            "tests/actuators/test_notice_volcano.py::test_the_pool_and_the_queues_room_decide_the_item",
        ),
    ),
    Mutation(
        "an enqueued PodGroup is still announced (its pods counted twice, never resolved)",
        "forecaster/actuators/notice/volcano.py",
        '        if (obj.get("status") or {}).get("phase", "Pending") != "Pending":',
        '        if (obj.get("status") or {}).get("phase", "Pending") == "never":',
        (
            "tests/actuators/test_notice_volcano.py::test_a_gang_on_a_pool_scaled_to_zero_gets_capacity_is_enqueued_and_lands_warm",
        ),
    ),
    Mutation(
        "a PodGroup Volcano never enqueues holds prewarm for ever (no TTL, never charged)",
        "forecaster/actuators/notice/volcano.py",
        "                latest_start=created + context.grace_seconds,",
        "                latest_start=created + 10**9,",
        (
            "tests/actuators/test_notice_volcano.py::test_a_group_volcano_never_enqueues_is_withdrawn_by_its_ttl_and_charged",
        ),
    ),
    Mutation(
        "the twin leaves queued (Kueue) jobs out of its histories, though no source marks them",
        "forecaster/simulation/twin.py",
        "    flags: list[bool] = np.isin(declared.kind, (CRON, PIPELINE)).tolist()",
        "    flags: list[bool] = (declared.kind != 0).tolist()",
        (
            "tests/simulation/test_declared_notice.py::test_queued_jobs_stay_in_the_twins_histories_cron_and_pipeline_jobs_do_not",
        ),
    ),
    Mutation(
        "a new pending MIG/AMD/Neuron pod wakes no tick (only whole NVIDIA GPUs do)",
        "forecaster/actuators/observe/pod_watch.py",
        '        return phase in (None, "Pending") and bool(accelerators(pod))',
        '        return phase in (None, "Pending") and "nvidia.com/gpu" in accelerators(pod)',
        (
            "tests/actuators/test_pod_watch.py::test_new_pending_gpu_pods_wake_the_loop_and_nothing_else_does",
        ),
    ),
    Mutation(
        "a notice object that raises our own error stops every source (isolation by type only)",
        "forecaster/actuators/notice/base.py",
        "        except Exception as exc:  # any object, however written, costs itself only",
        "        except (KeyError, ValueError, TypeError, AttributeError) as exc:",
        (
            "tests/faults/test_tenant_objects.py::test_a_greedy_notice_object_leaves_every_pool_acting_and_pause_withdrawing[cronjobs-1Ki]",
        ),
    ),
    Mutation(
        "binary quantity suffixes read one power of 1024 short",
        "forecaster/actuators/quantities.py",
        '("KMGTPE".index(match["binary"][0]) + 1)',
        '("KMGTPE".index(match["binary"][0]) + 0)',
        ("tests/actuators/test_quantities.py",),
    ),
    Mutation(
        "a request larger than a node is read as placeable",
        "forecaster/actuators/quantities.py",
        "    if node_units is not None and units > node_units:",
        "    if False:",
        (
            "tests/actuators/test_quantities.py",
            "tests/faults/test_tenant_objects.py::test_a_pending_pod_asking_1ki_gpus_is_passed_over_and_its_pool_plans",
        ),
    ),
    Mutation(
        "a pending pod larger than any node is counted as its pool's demand",
        "forecaster/actuators/observe/pod_tally.py",
        """        return fits_one_node(
            pod_gpus(pod, resource), node_units=node_units, what="the pod", pool=pool
        )""",
        "        return pod_gpus(pod, resource)",
        (
            "tests/faults/test_tenant_objects.py::test_a_pending_pod_asking_1ki_gpus_is_passed_over_and_its_pool_plans",
        ),
    ),
    Mutation(
        "the kill switch withdraws nothing while the cluster cannot be observed",
        "forecaster/reconcile/acting.py",
        "    if actuator is None or (snapshots is None and halt is None):",
        "    if actuator is None or snapshots is None:",
        (
            "tests/faults/test_tenant_objects.py::test_the_kill_switch_withdraws_even_when_the_cluster_cannot_be_observed",
        ),
    ),
    Mutation(
        "a notice read is not cut to its deadline (the client's timeout, retried, instead)",
        "forecaster/actuators/kube.py",
        "            timeout = max(0.05, min(timeout, left))",
        "            timeout = timeout",
        (
            "tests/faults/test_tenant_objects.py::test_a_hanging_source_costs_its_deadline_once_then_backs_off",
        ),
    ),
    Mutation(
        "a source that ran out of time is asked again at every tick",
        "forecaster/actuators/notice/base.py",
        "        hung = {n: until for n, (_, until) in self._hung.items() if now < until}",
        "        hung: dict[str, int] = {}",
        (
            "tests/faults/test_tenant_objects.py::test_a_hanging_source_costs_its_deadline_once_then_backs_off",
        ),
    ),
    Mutation(
        "expiry stops at buffers that cannot be listed, before any NodePool",
        "forecaster/app/cleanup.py",
        '        undone.attempt(f"prewarm backend {name}", run)',
        "        run()",
        (
            "tests/faults/test_tenant_objects.py::test_buffers_that_cannot_be_listed_leave_every_nodepool_restored",
        ),
    ),
    Mutation(
        "backend discovery that fails stops expiry and uninstall",
        "forecaster/app/cleanup.py",
        '        undone.attempt(f"prewarm backend {name}", discover)',
        "        discover()",
        (
            "tests/faults/test_tenant_objects.py::test_buffers_that_cannot_be_listed_leave_every_nodepool_restored",
        ),
    ),
    Mutation(
        "a damaged notice section of the state is read as empty (a cut source trusted again)",
        "forecaster/reconcile/state.py",
        "    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:\n"
        '        raise StateFormatError(f"the persisted notice outcomes',
        "    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:\n"
        '        return ()\n        raise StateFormatError(f"the persisted notice outcomes',
        ("tests/faults/test_fail_closed_state.py",),
    ),
    Mutation(
        "a skipped object is said in an Event at every tick",
        "forecaster/actuators/events.py",
        "            >= SKIPPED_EVENT_EVERY_SECONDS\n",
        "            >= 0\n",
        (
            "tests/faults/test_tenant_objects.py::test_a_greedy_notice_object_leaves_every_pool_acting_and_pause_withdrawing[podgroups-1Ki]",
        ),
    ),
    Mutation(
        "a PodTemplate of our buffer's name that someone else wrote is used",
        "forecaster/actuators/prewarm/capacitybuffers.py",
        '        if (meta.get("labels") or {}).get(lbl.MANAGED_BY) != lbl.MANAGER:',
        "        if False:",
        (
            "tests/actuators/test_buffer_template.py::test_a_foreign_template_of_our_name_is_refused_not_used",
        ),
    ),
    Mutation(
        "our buffer's PodTemplate keeps its old shape when the pool's nodes change",
        "forecaster/actuators/prewarm/capacitybuffers.py",
        "            self.kube.replace_pod_template(self.namespace, desired)",
        "            pass",
        (
            "tests/actuators/test_buffer_template.py::test_a_pool_whose_nodes_change_gets_its_template_replaced_and_is_charged_the_new_size",
        ),
    ),
    Mutation(
        "a buffer is charged its first chunk size after the chunk changed",
        "forecaster/actuators/prewarm/capacitybuffers.py",
        "**({lbl.GPUS: str(spec.gpus)} if replicas else {})",
        "**({})",
        (
            "tests/actuators/test_buffer_template.py::test_a_pool_whose_nodes_change_gets_its_template_replaced_and_is_charged_the_new_size",
        ),
    ),
    Mutation(
        "an announced item counts as come when it leaves the reading, pods or not",
        "forecaster/core/notice.py",
        "        if present is not None and item.source in marking:",
        "        if False:",
        (
            "tests/core/test_notice.py::test_an_item_comes_when_its_pods_come_not_when_it_leaves_the_reading",
            "tests/faults/test_notice_judged_by_pods.py::test_a_cronjob_whose_runs_make_no_pod_is_judged_not_come_run_after_run",
        ),
    ),
    Mutation(
        "an item re-announced with a later deadline is held to the later one",
        "forecaster/core/notice.py",
        "            if before is not None and before.item.latest_start < read.latest_start:",
        "            if False:",
        (
            "tests/core/test_notice.py::test_an_item_keeps_its_first_deadline_and_is_not_followed_again_once_ended",
        ),
    ),
    Mutation(
        "an item that ended is followed (and held) again when its source lists it again",
        "forecaster/core/notice.py",
        "            if key in self._ended:\n                continue",
        "            if False:\n                continue",
        (
            "tests/core/test_notice.py::test_an_item_keeps_its_first_deadline_and_is_not_followed_again_once_ended",
        ),
    ),
    Mutation(
        "an item withdrawn as not come is planned again while its source lists it",
        "forecaster/reconcile/observing.py",
        "        _leave_out_ended(ledger, snapshots)",
        "        pass",
        (
            "tests/faults/test_notice_judged_by_pods.py::test_a_jobset_stage_whose_initializer_never_finishes_is_withdrawn_once",
        ),
    ),
    Mutation(
        "the pods of an announced item are not seen as its coming",
        "forecaster/actuators/observe/pod_tally.py",
        "        tally.present.add(announcement)",
        "        pass",
        (
            "tests/actuators/test_notice_cronjobs.py::test_runs_that_never_come_cut_the_source_and_runs_that_come_restore_it",
        ),
    ),
    Mutation(
        "a namespace's cut items are matched by source: every namespace of it is cut",
        "forecaster/core/planner.py",
        "if i.trust_key not in distrusted and i.key",
        "if i.source not in distrusted and i.key",
        (
            "tests/core/test_notice.py::test_a_namespaces_misses_cut_its_own_items_not_the_sources_in_another_namespace",
        ),
    ),
    Mutation(
        "trust is judged per source: one namespace's misses cut every namespace",
        "forecaster/core/notice.py",
        "by_key.setdefault((o.source, o.namespace), ([], []))",
        'by_key.setdefault((o.source, ""), ([], []))',
        (
            "tests/core/test_notice.py::test_a_namespaces_misses_cut_its_own_items_not_the_sources_in_another_namespace",
        ),
    ),
    Mutation(
        "an announced item does not carry its object's namespace",
        "forecaster/actuators/notice/base.py",
        "            found += [_of_namespace(i, obj) for i in source.announce(obj, context)]",
        "            found += source.announce(obj, context)",
        (
            "tests/actuators/test_notice_cronjobs.py::test_runs_that_never_come_cut_the_source_and_runs_that_come_restore_it",
        ),
    ),
    Mutation(
        "a restart forgets which namespace each notice outcome was of",
        "forecaster/reconcile/state.py",
        '        namespace=str(names[int(rest[0])] if rest else ""),',
        '        namespace="",',
        (
            "tests/actuators/test_notice_cronjobs.py::test_runs_that_never_come_cut_the_source_and_runs_that_come_restore_it",
        ),
    ),
    Mutation(
        "the trust window counts an outcome exactly 7 days old",
        "forecaster/core/notice.py",
        '        left = np.searchsorted(ats, moments - TRUST_WINDOW_SECONDS, side="right")',
        '        left = np.searchsorted(ats, moments - TRUST_WINDOW_SECONDS, side="left")',
        (
            "tests/core/test_notice.py::test_an_outcome_exactly_seven_days_old_has_left_the_trust_window",
            "tests/core/test_notice.py::test_the_trust_check_answers_as_the_scan_it_replaced",
        ),
    ),
    Mutation(
        "an excluded namespace's announced work is read anyway",
        "forecaster/actuators/notice/base.py",
        "            if namespaces.allows(item.namespace):",
        "            if True:",
        (
            "tests/actuators/test_notice_cronjobs.py::test_notice_namespaces_choose_whose_announced_work_is_read",
        ),
    ),
    Mutation(
        "the ended items a tenant's runs make are remembered without bound",
        "forecaster/core/notice.py",
        "        if len(self._ended) > MAX_ENDED:  # the oldest go first",
        "        if False:  # the oldest go first",
        ("tests/core/test_notice.py::test_the_ended_items_remembered_are_bounded_newest_kept",),
    ),
    Mutation(
        "the queries leave out only one of our namespaces (earlier versions' placeholders count)",
        "forecaster/sources/prometheus.py",
        """    return f'namespace!~"{"|".join(namespaces)}"'""",
        """    return f'namespace!="{namespaces[0]}"'""",
        (
            "tests/deploy/test_manifests.py::test_the_demand_recording_rule_counts_what_the_default_query_counts",
        ),
    ),
    Mutation(
        "placeholders may live beside our accounts (the daemon could borrow one)",
        "forecaster/settings/schema.py",
        "        if self.planning.placeholders.namespace == self.namespace:",
        "        if False:",
        ("tests/deploy/test_upgrade_chart.py",),
    ),
    Mutation(
        "what an earlier version left in our own namespace is never withdrawn",
        "forecaster/app/cleanup.py",
        '    return [(f"{name} ({MOVED})", b) for name, b in _served(kube, namespace, undone)]',
        "    return []",
        (
            "tests/faults/test_upgrade.py::test_the_daemon_continues_from_what_0_1_left",
            "tests/deploy/test_upgrade_chart.py",
        ),
    ),
    Mutation(
        "the expiry CronJob leaves what an earlier version held in our namespace",
        "forecaster/app/cleanup.py",
        "    _each(undone, moved, lambda backend: backend.uninstall(undone))\n",
        "",
        ("tests/deploy/test_upgrade_chart.py",),
    ),
    Mutation(
        "the placeholders' Roles land in our own namespace (Kustomize)",
        "deploy/placeholders/kustomization.yaml",
        "namespace: forecaster-placeholders",
        "namespace: forecaster",
        ("tests/deploy/test_rbac.py::test_no_account_can_be_borrowed",),
    ),
    Mutation(
        "the daemon may get and patch every NodePool (Helm)",
        "deploy/helm/forecaster/templates/rbac.yaml",
        "    resourceNames: {{ $pools | toJson }}\n",
        "",
        (
            "tests/deploy/test_config_rbac.py::test_the_daemons_nodepool_grant_names_the_configured_pools",
        ),
    ),
    Mutation(
        "every notice source's reads are granted, enabled or not (Helm)",
        "deploy/helm/forecaster/templates/rbac.yaml",
        "{{- if has $name $sources }}{{ $notice = concat $notice $rules }}{{ end -}}",
        "{{- $notice = concat $notice $rules -}}",
        ("tests/deploy/test_config_rbac.py::test_notice_grants_follow_notice_sources",),
    ),
    Mutation(
        "a 403 on one pool's NodePool stops every pool's tick",
        "forecaster/actuators/observe/observer.py",
        "    NodePoolForbiddenError,  # a 403 on this pool's NodePool: our grant does not name",
        "    # (mutated away) a 403 on this pool's NodePool: our grant does not name",
        (
            "tests/deploy/test_config_rbac.py::test_a_pool_missing_from_the_grant_gets_its_own_403_and_doctor_names_it",
        ),
    ),
    Mutation(
        "doctor does not name a pool missing from the daemon's NodePool grant",
        "forecaster/app/doctor.py",
        "        if pool.name not in named",
        "        if False",
        (
            "tests/deploy/test_config_rbac.py::test_a_pool_missing_from_the_grant_gets_its_own_403_and_doctor_names_it",
        ),
    ),
    Mutation(
        "announced items in flight have no cap (tenants decide how many are held and saved)",
        "forecaster/core/notice.py",
        "        resolved += self._drop_past_cap(now=now, window=window_seconds)\n",
        "",
        (
            "tests/core/test_notice.py::test_past_the_cap_the_least_urgent_items_are_dropped_charged_and_counted",
        ),
    ),
    Mutation(
        "a dropped item is followed again when its source lists it once more",
        "forecaster/core/notice.py",
        "            self._close(key, now=now)\n            self.dropped[",
        "            del self._open[key]\n            del self._pool_keys[key[0]][key]\n"
        "            self.dropped[",
        (
            "tests/core/test_notice.py::test_past_the_cap_the_least_urgent_items_are_dropped_charged_and_counted",
        ),
    ),
    Mutation(
        "the most urgent items are dropped past the cap",
        "forecaster/core/notice.py",
        "        for key in urgency[-count:]:",
        "        for key in urgency[:count]:",
        (
            "tests/core/test_notice.py::test_past_the_cap_the_least_urgent_items_are_dropped_charged_and_counted",
        ),
    ),
    Mutation(
        "a key stored short is read back without its source and namespace",
        "forecaster/reconcile/in_flight_codec.py",
        '            f"{source_name} {namespace_name}/{key}" if short else str(key),',
        "            str(key),",
        ("tests/reconcile/test_in_flight_codec.py",),
    ),
    Mutation(
        "items in flight that would overflow the state ConfigMap are kept (every save refused)",
        "forecaster/reconcile/in_flight_codec.py",
        "        if size <= MAX_ENCODED_BYTES:",
        "        if True:",
        (
            "tests/reconcile/test_in_flight_codec.py::test_names_that_do_not_compress_are_shed_least_urgent_first_to_fit",
        ),
    ),
    Mutation(
        "a namespace's notice may spend the whole day budget (other pools' floors cut early)",
        "forecaster/reconcile/observing.py",
        "    cut = {**ledger.over_share(now=now, limit=budgets.notice_namespace_gpu_hours)}",
        "    cut = {}",
        (
            "tests/faults/test_notice_spend_share.py::test_a_tenants_notice_brings_the_floor_cut_no_earlier_than_its_share_buys",
        ),
    ),
    Mutation(
        "a namespace at its notice share is still planned",
        "forecaster/core/notice.py",
        "        if hours >= limit:",
        "        if hours > limit + 1:",
        (
            "tests/core/test_notice.py::test_a_namespace_over_its_share_of_the_day_is_left_out_for_every_source",
        ),
    ),
    Mutation(
        "items in flight do not count toward their namespace's notice share",
        "forecaster/core/notice.py",
        "            held[item.namespace] = held.get(item.namespace, 0.0) + hours",
        "            pass",
        (
            "tests/core/test_notice.py::test_a_namespace_over_its_share_of_the_day_is_left_out_for_every_source",
        ),
    ),
    Mutation(
        "a namespace's notice older than a day still counts toward its share",
        "forecaster/core/notice.py",
        "        if o.namespace and o.at > since:",
        "        if o.namespace:",
        (
            "tests/core/test_notice.py::test_a_namespace_over_its_share_of_the_day_is_left_out_for_every_source",
        ),
    ),
    Mutation(
        "doctor does not list the namespaces whose notice held the most",
        "forecaster/cli/oneshot.py",
        "        *doctor.namespace_lines(settings, kube, now=now),\n",
        "",
        ("tests/app/test_doctor_namespaces.py",),
    ),
    Mutation(
        "the top namespaces are listed by name, not by what their notice held",
        "forecaster/core/notice.py",
        "    found.sort(key=lambda n: (-n.held_gpu_hours, n.namespace))",
        "    found.sort(key=lambda n: n.namespace)",
        (
            "tests/core/test_notice.py::test_the_top_namespaces_are_those_whose_notice_held_the_most",
        ),
    ),
)


def scratch_copy() -> Path:
    target = Path(tempfile.mkdtemp(prefix="forecaster-mutant-"))
    for name in ("forecaster", "tests", "bench", "data", "config", "deploy", "scripts"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", target / "pyproject.toml")
    return target


def survives(mutation: Mutation) -> bool:
    """Apply ``mutation`` in a scratch copy and run its tests there; True if they still pass."""
    scratch = scratch_copy()
    try:
        path = scratch / mutation.path
        text = path.read_text()
        if text.count(mutation.before) != 1:
            raise SystemExit(f"mutation-check: {mutation.name!r} no longer applies to {path}")
        path.write_text(text.replace(mutation.before, mutation.after))
        probe = (
            "import forecaster, sys;"
            " sys.exit(0 if forecaster.__file__.startswith(sys.argv[1]) else 1)"
        )
        if subprocess.run(
            [sys.executable, "-c", probe, str(scratch)], cwd=scratch, check=False
        ).returncode:
            raise SystemExit("mutation-check: the scratch copy is not the code under test")
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", *QUIET_PLUGINS, *mutation.tests],
            cwd=scratch,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode not in (0, 1):  # 1 = tests failed; anything else is no verdict
            raise SystemExit(
                f"mutation-check: {mutation.name!r}: pytest exited {result.returncode}:\n"
                + result.stdout[-2000:]
            )
        return result.returncode == 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def timed(mutation: Mutation) -> tuple[bool, float]:
    """``survives`` and how long it took."""
    started = time.monotonic()
    return survives(mutation), time.monotonic() - started


def main() -> int:
    """Every mutant, one per core at a time (each is its own pytest process in its own scratch
    copy; servers the tests start take free ports)."""
    survivors = []
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for mutation, (alive, seconds) in zip(MUTATIONS, pool.map(timed, MUTATIONS), strict=True):
            verdict = "SURVIVED" if alive else "caught"
            print(f"mutation-check: {verdict:8} {mutation.name} ({seconds:.0f} s)", flush=True)
            if alive:
                survivors.append(mutation.name)
    print(f"mutation-check: {len(MUTATIONS) - len(survivors)} of {len(MUTATIONS)} caught")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
