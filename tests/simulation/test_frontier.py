"""``replay --frontier``: the sweep, the operating-point choice and the JSON for scripts.

Cases: window flags are parsed or refused with the flag named; the static curve is interpolated
linearly and not extrapolated; the operating point for a budget is the best tuning-window mean
wait within it (none when nothing fits); no choice looks at the evaluation window - two traces
that differ only after the tuning window get the same chosen knobs (quantile and floor), yet
different evaluation figures; the JSON has the documented shape; the CLI writes it; worker
processes give the same figures as one.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from html import escape as html_escape
from pathlib import Path

import numpy as np
import pytest

from forecaster.app.replay_policies import replay_policy
from forecaster.cli import main
from forecaster.cli import replay as replay_cli
from forecaster.core.jobs import JobTrace
from forecaster.durations import DAY
from forecaster.errors import ConfigError
from forecaster.simulation.frontier import (
    KEYS,
    MAX_EXTENSIONS,
    FloorChains,
    FrontierInterrupted,
    Point,
    Run,
    choose,
    confirm_burst,
    extend_static,
    frontier,
    in_words,
    interpolate,
    parse_days,
    said,
    sweep,
)
from forecaster.simulation.metrics import ReplayMetrics
from forecaster.simulation.replay import ReplaySetup, RetrainSchedule
from forecaster.simulation.twin import Policy
from tests.factories import REPLAY_T0 as T0
from tests.factories import jobs_csv, setup, small_frontier, synthetic


def metrics(gpu_hours: float, mean: float = 0.0, share: float = 0.0) -> ReplayMetrics:
    return ReplayMetrics(
        jobs=1,
        mean_wait_s=mean,
        p50_wait_s=0,
        p95_wait_s=mean * 3,
        p99_wait_s=0,
        share_waiting_over_60s=share,
        share_waiting_over_5min=share,
        gpu_hours=gpu_hours,
        idle_gpu_hours=0,
        prewarm_gpu_hours_used=0,
        prewarm_gpu_hours_expired=0,
        cost=0,
        cost_spot=0,
        cap_breaches=0,
        handoffs=0,
    )


def test_window_flags() -> None:
    assert parse_days("10-30", "--tune-days") == (10.0, 30.0)
    for bad in ("10", "30-10", "a-b"):
        with pytest.raises(ConfigError, match="--tune-days"):
            parse_days(bad, "--tune-days")


def test_the_static_curve_is_interpolated_not_extrapolated() -> None:
    curve = [metrics(100, mean=50), metrics(200, mean=10)]
    assert interpolate(curve, 150, key="mean_wait_s") == pytest.approx(30)
    assert interpolate(curve, 250, key="mean_wait_s") is None


def test_the_comparison_is_said_in_words_at_the_same_gpu_hours() -> None:
    curve = [metrics(100, mean=50, share=0.2), metrics(200, mean=10, share=0.0)]
    # static at 150 GPU-hours: mean 30 s, P95 90 s, 10 % over 5 min
    said = in_words("predictive", metrics(150, mean=20, share=0.15), curve, reactive_gpu_hours=100)
    assert said == (
        "predictive: 150 GPU-hours (+50.0% against reactive scaling); against static headroom"
        " of the same cost, P95 wait 60 s against 90 s, mean wait 20.0 s against 30.0 s,"
        " jobs waiting over 5 minutes 15.0% against 10.0% - better on P95 wait, mean wait;"
        " worse on jobs waiting over 5 minutes"
    )
    assert in_words("oracle", metrics(150, mean=30, share=0.1), curve).endswith("- the same")
    assert "outside the static headroom swept (100-200 GPU-hours)" in in_words(
        "burst", metrics(250, mean=1), curve
    )
    assert "no static sweep" in in_words("burst", metrics(150), curve[:1])


def test_the_operating_point_is_the_best_tuning_wait_within_the_budget() -> None:
    points = [
        Point(0.8, tune=metrics(103, mean=40), eval=metrics(0)),
        Point(0.9, tune=metrics(104, mean=30), eval=metrics(0)),
        Point(0.95, tune=metrics(108, mean=20), eval=metrics(0)),
    ]
    chosen = choose(points, reactive_gpu_hours=100, budget_percent=5)
    assert chosen is not None and chosen.knob == 0.9
    assert choose(points, reactive_gpu_hours=100, budget_percent=1) is None
    floored = Point(0.8, tune=metrics(104.5, mean=25), eval=metrics(0), floor_gpus=16)
    chosen = choose([*points, floored], reactive_gpu_hours=100, budget_percent=5)
    assert chosen is floored and chosen.knobs == {"knob": 0.8, "floor_gpus": 16}
    assert chosen.label == "P80+16" and points[0].knobs == {"knob": 0.8}


def test_no_choice_looks_at_the_evaluation_window(tmp_path: Path) -> None:
    base = synthetic(6, seed=5)
    other = synthetic(6, seed=6)
    cut = T0 + 4 * DAY  # evaluation days 4-6
    keep, new = base.submit < cut, other.submit >= cut
    changed = JobTrace(
        submit=np.concatenate((base.submit[keep], other.submit[new])),
        duration=np.concatenate((base.duration[keep], other.duration[new])),
        gpus=np.concatenate((base.gpus[keep], other.gpus[new] * 2)),
    )
    s = dataclasses.replace(
        setup(6),
        twin=dataclasses.replace(setup(6).twin, max_prewarm_gpus=64),
        retrain=RetrainSchedule(min_train_seconds=DAY, every_seconds=2 * DAY),  # a model by day 1
    )
    runs = [
        frontier(
            jobs,
            s,
            make_policy=replay_policy,
            epoch=T0,
            tune=(1, 3),
            evaluate=(4, 6),
            static_knobs=(0, 16, 64),
            predictive_knobs=(0.95,),
            floor_nodes=(0, 6),
            burst_knobs=(1.0, 4.0),
            continuation_gaps=(60,),
        )[0]
        for jobs in (base, changed)
    ]
    a, b = runs
    assert a["tune"] == b["tune"]  # the tuning window ends before the traces differ
    assert a["static"] != b["static"]  # ... and the evaluation window sees the difference
    for chosen in ("chosen", "chosen_burst"):
        assert {k: (v["knob"], v.get("floor_gpus")) for k, v in a[chosen].items()} == {
            k: (v["knob"], v.get("floor_gpus")) for k, v in b[chosen].items()
        }
    assert {k: v["knob"] for k, v in a["chosen_continuation"]["60"].items()} == {
        k: v["knob"] for k, v in b["chosen_continuation"]["60"].items()
    }
    assert [p["knob"] for p in a["continuation"]["60"]] == [0, 16, 64]  # its floors: static's K
    assert a["continuation"]["60"][2]["gpu_hours"] > a["continuation"]["60"][0]["gpu_hours"]
    for key in ("reactive", "oracle"):
        assert set(a[key]) == set(KEYS)
    assert [p["knob"] for p in a["static"]] == [0, 16, 64]
    assert [(p["knob"], p["floor_gpus"]) for p in a["predictive"]] == [(0.95, 0), (0.95, 48)]
    assert all("floor_gpus" in p for p in a["chosen"].values())
    assert a["predictive"][1]["gpu_hours"] > a["predictive"][0]["gpu_hours"]  # the floor costs
    assert set(a["chosen"]) <= {"5", "10"}


def test_the_cli_writes_the_frontier_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the command's wiring, with one knob per curve (the sweep itself: the test above)
    monkeypatch.setattr(replay_cli, "frontier", small_frontier(continuation_gaps=(60,)))
    jobs = synthetic(3, seed=7)
    trace, epoch = jobs_csv(tmp_path / "jobs.csv", jobs)
    out = tmp_path / "frontier.json"
    code = main(
        [
            "replay",
            "--jobs",
            str(trace),
            "--epoch",
            epoch,
            "--frontier",
            "--tune-days",
            "1-2",
            "--eval-days",
            "2-3",
            "--json",
            str(out),
            "--report",
            str(tmp_path / "f.html"),
            "--bounds",
        ]
    )
    assert code == 0
    document = json.loads(out.read_text())
    assert {"reactive", "oracle", "static", "predictive", "chosen", "tune"} <= set(document)
    assert set(document["continuation"]) == {"60"}  # --bounds: the continuation bound too
    meta = document["meta"]
    assert (meta["trace"], meta["epoch"], meta["jobs"]) == (str(trace), epoch, len(jobs))
    assert meta["parameters"]["tune_days"] == "1-2" and meta["parameters"]["bounds"] is True
    assert meta["forecaster"] and "commit" in meta
    out = capsys.readouterr().out
    assert "windows: tune days 1-2, evaluation days 2-3" in out
    assert "the trace, tuned days 2-2, judged days 3-3" in out  # counted from 1, as history's
    assert "continuation: knows the rest of each submission" in out
    # the report says in words, before its chart, where each chosen point stands
    html = (tmp_path / "f.html").read_text()
    assert set(document["verdict"]) == {"5", "10"}
    assert "-- verdict (rule: forecaster where <= 0.9x of static" in out
    assert sum("-> recommend " in line for line in out.splitlines()) == 2
    words = said(document)
    # predictive and burst per budget, the oracle, then the verdict (two lines or more a budget)
    assert len(words) >= 2 * 2 + 1 + 2 * 2
    assert sum("-> recommend " in w for w in words) == 2
    for budget in ("5", "10"):
        if budget in document["chosen"]:
            assert any(w.startswith(f"+{budget} % budget, predictive P90") for w in words)
    assert all(html_escape(w) in html for w in words)
    assert html.index("Against static headroom") < html.index("<img")


def test_workers_give_the_same_frontier() -> None:
    jobs = synthetic(3, seed=7)
    sweep = functools.partial(
        frontier,
        jobs,
        setup(3),
        make_policy=replay_policy,
        epoch=T0,
        tune=(1, 2),
        evaluate=(2, 3),
        static_knobs=(0, 32),
        predictive_knobs=(0.9,),
        floor_nodes=(0, 2),
        burst_knobs=(2.0,),
        continuation_gaps=(60,),
    )
    reported: list[str] = []
    serial = sweep(workers=1)
    assert sweep(workers=2, progress=reported.append) == serial
    assert len(reported) == 9  # reactive, oracle, 2 static, 2 predictive, 1 burst, 2 bounds
    assert sum("predictive P90+16 done" in line for line in reported) == 1
    assert reported[-1].endswith("(9 of 9)")


def test_the_static_sweep_is_extended_until_it_brackets_the_chosen_points() -> None:
    def point(k: float) -> Point:
        m = metrics(100 + k)  # each GPU of headroom: one more GPU-hour
        return Point(k, m, m)

    asked: list[list[int]] = []

    def run(knobs: Sequence[int]) -> list[Point]:
        asked.append(list(knobs))
        return [point(k) for k in knobs]

    swept = [point(0), point(16), point(32)]
    curve = extend_static(swept, [150.0], run=run, gpus_per_node=8)
    # half again the largest K in whole nodes: 48 (148 GPU-hours, short of 150), then 72
    assert asked == [[48], [72]] and [p.knob for p in curve] == [0, 16, 32, 48, 72]
    assert interpolate([p.eval for p in curve], 150.0, key="mean_wait_s") is not None
    assert extend_static(swept, [120.0], run=run, gpus_per_node=8) == swept  # bracketed: none
    far = extend_static(swept, [1e6], run=run, gpus_per_node=8)
    assert len(far) == 3 + MAX_EXTENSIONS  # bounded: past that the verdict says "widen it"


def test_a_larger_floor_is_replayed_only_while_the_last_kept_within_the_largest_budget() -> None:
    """``FloorChains``: predictive starts at its smallest floor; the next floor at a quantile
    is added once the last one's tuning GPU-hours are within +10 % of reactive's (a larger
    floor only costs more: past every budget it could not be chosen), and not before reactive's
    are known. The training job's choice skips floors by the same rule."""
    s = setup(3)
    runs = sweep(
        s,
        static_knobs=(0,),
        predictive_knobs=(0.8, 0.9),
        floor_nodes=(0, 2, 4),
        burst_knobs=(),
        continuation_gaps=(),
    )
    assert [r.label for r in runs if r.curve == "predictive"] == [
        "predictive P80",
        "predictive P90",
    ]
    chains = FloorChains(runs, s, floor_nodes=(0, 2, 4))
    index = {r.label: i for i, r in enumerate(runs)}

    def point(run: Run, gpu_hours: float) -> Point:
        return Point(run.knob, metrics(gpu_hours), metrics(gpu_hours), run.floor)

    p80, p90 = runs[index["predictive P80"]], runs[index["predictive P90"]]
    assert chains(index["predictive P80"], point(p80, 105.0)) == []  # reactive not known yet
    assert chains(index["predictive P90"], point(p90, 111.0)) == []
    added = chains(index["reactive"], point(runs[index["reactive"]], 100.0))
    # P80 at +5 %: its next floor (2 nodes); P90 at +11 %, past the largest budget: none
    assert [r.label for r in added] == ["predictive P80+16"]
    assert runs[-1] is added[0] and added[0].setup.floor_gpus == 16
    assert chains(len(runs) - 1, point(added[0], 110.0)) != []  # +10 %: still within
    assert chains(len(runs) - 1, point(runs[-1], 110.5)) == []  # P80+32 past it: no P80+48
    assert [r.label for r in runs if r.curve == "predictive"][-2:] == [
        "predictive P80+16",
        "predictive P80+32",
    ]


def test_the_burst_rule_is_replayed_in_the_loop_only_where_its_point_qualifies() -> None:
    """``confirm_burst``: one ``burst-live`` run per alpha whose chosen point qualifies on the
    rule's figures (none otherwise); its figures are written where it kept within the budget on
    the tuning window, and said where it did not."""
    static = [
        Point(k, metrics(100 + k, mean=100 - k), metrics(100 + k, mean=100 - k)) for k in (0, 8, 16)
    ]

    def row(gpu_hours: float, mean: float, knob: float) -> dict[str, float]:
        return {
            "gpu_hours": gpu_hours,
            "mean_wait_s": mean,
            "p95_wait_s": mean * 3,
            "share_waiting_over_5min": 0.0,
            "knob": knob,
        }

    document = {
        "static": [row(100 + p.knob, 100 - p.knob, p.knob) for p in static],
        "tune": {"reactive": row(100, 100, 0), "static": []},
        "chosen_burst": {"5": row(104, 60, 2.0), "10": row(104, 60, 2.0)},  # 0.63x: qualifies
    }
    asked: list[list[float]] = []

    def run(alphas: list[float]) -> list[Point]:
        asked.append(alphas)
        return [Point(a, metrics(107.0, mean=90), metrics(104.0, mean=90)) for a in alphas]

    reactive = Point(0, metrics(100.0), metrics(100.0))
    lines = confirm_burst(document, reactive=reactive, static=static, run=run)
    assert asked == [[2.0]]  # one run for both budgets
    # +7 % on the tuning window: over the +5 % budget, within the +10 %
    assert list(document["chosen_burst_live"]) == ["10"]
    assert document["chosen_burst_live"]["10"]["mean_wait_s"] == 90
    assert "+5 % budget: burst 2 in the daemon's loop (burst-live) spent over" in lines[0]
    document["chosen_burst"] = {"5": row(104, 99, 2.0)}  # no better than static: no run
    asked.clear()
    assert confirm_burst(document, reactive=reactive, static=static, run=run) == []
    assert asked == [] and document["chosen_burst_live"] == {}


def test_ctrl_c_in_the_static_extension_keeps_the_sweep_that_finished() -> None:
    """The extension (and the burst rule's replay in the loop) runs after the sweep: Ctrl-C
    there writes every run finished before it, not only the extension's."""

    def interrupted_past_static_0(name: str, s: ReplaySetup, *, jobs: JobTrace) -> Policy:
        if name.startswith("static:") and name != "static:0":
            raise KeyboardInterrupt
        return replay_policy(name, s, jobs=jobs)

    with pytest.raises(FrontierInterrupted) as stop:
        frontier(
            synthetic(3, seed=7),
            setup(3),
            make_policy=interrupted_past_static_0,
            epoch=T0,
            tune=(1, 2),
            evaluate=(2, 3),
            static_knobs=(0,),
            predictive_knobs=(0.9,),
            floor_nodes=(0,),
            burst_knobs=(0.25,),
            continuation_gaps=(),
        )
    document = stop.value.document
    assert document["partial"] is True
    assert {"reactive", "oracle", "static:0", "predictive P90", "burst:0.25"} <= set(
        document["finished"]
    )
    assert document["runs"] > len(document["finished"])  # the interrupted extension counts
    # (burst:0.25 spends +2.6 % on the tuning window, past static:0's GPU-hours: extended)
