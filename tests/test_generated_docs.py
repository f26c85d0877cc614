"""The documents generated from the code and from benchmark output stay what their scripts make.

``docs/config-reference.md`` is what ``scripts/config_reference.py`` makes of the config's schema
(a field added without regenerating fails here); ``scripts/results_tables.py`` turns a
``replay --frontier`` JSON into one row per budget - the chosen point, its GPU-hours against
reactive, and its ratios over static headroom and the burst rule interpolated at the same
GPU-hours - and writes it between the markers of a document; the declared-notice bench's JSON
into one row per budget and share announced, with the seeds' spread.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import config_reference  # noqa: E402
import results_tables  # noqa: E402


def test_the_config_reference_is_current() -> None:
    assert config_reference.main(["--check"]) == 0


def test_the_published_frontier_table_is_what_the_committed_runs_make() -> None:
    """docs/results.md's frontier table is generated from the JSON of the two ITP frontier
    runs committed beside it: a hand edit, or a new run committed without regenerating, fails."""
    runs = sorted((ROOT / "docs" / "results").glob("frontier-*.json"))
    assert [r.stem for r in runs] == ["frontier-cluster04", "frontier-cluster07"]
    assert results_tables.main([*map(str, runs), "--check", str(ROOT / "docs" / "results.md")]) == 0


def test_the_published_declared_notice_table_is_what_the_committed_runs_make() -> None:
    """Likewise its declared-notice table, from the two declared-notice benches' JSON."""
    runs = sorted((ROOT / "docs" / "results").glob("declared-notice-*.json"))
    runs += sorted((ROOT / "docs" / "results").glob("frontier-*.json"))
    assert [r.stem for r in runs if r.stem.startswith("declared-notice")] == [
        "declared-notice-cluster04",
        "declared-notice-cluster07",
        "declared-notice-queue-cluster04",
        "declared-notice-queue-cluster07",
    ]
    assert results_tables.main([*map(str, runs), "--check", str(ROOT / "docs" / "results.md")]) == 0


def test_the_published_notice_frontier_table_is_what_the_committed_runs_make() -> None:
    """Likewise the frontier with declared notice, from its runs' JSON."""
    runs = sorted((ROOT / "docs" / "results").glob("notice-frontier-*.json"))
    assert runs and all(r.stem.startswith(results_tables.NOTICE_FRONTIER) for r in runs)
    assert results_tables.main([*map(str, runs), "--check", str(ROOT / "docs" / "results.md")]) == 0


def metrics(gpu_hours: float, share: float, mean: float, p95: float, **extra: float) -> dict:
    return {
        "gpu_hours": gpu_hours,
        "share_waiting_over_5min": share,
        "share_waiting_over_60s": share,
        "mean_wait_s": mean,
        "p95_wait_s": p95,
        "cap_breaches": 0,
        **extra,
    }


FRONTIER = {
    "reactive": metrics(1000, 0.20, 100, 400),
    "oracle": metrics(1010, 0.0, 1, 5),
    "static": [
        metrics(1000, 0.20, 100, 400, knob=0),
        metrics(1100, 0.10, 50, 300, knob=32),
        metrics(1200, 0.05, 20, 200, knob=64),
    ],
    "burst": [metrics(1000, 0.20, 100, 400, knob=0), metrics(1200, 0.10, 40, 300, knob=2)],
    "chosen": {"5": metrics(1050, 0.06, 60, 330, knob=0.8, floor_gpus=16)},
    "chosen_burst": {},
}
"""A frontier as ``replay --frontier --json`` writes it: static at 0/32/64 GPUs, a burst sweep,
a point chosen for +5 % and none for +10 %."""


def test_a_frontier_becomes_a_row_per_budget_between_the_markers(tmp_path: Path) -> None:
    source = tmp_path / "frontier-toy.json"
    source.write_text(json.dumps(FRONTIER))
    document = tmp_path / "doc.md"
    document.write_text(f"before\n{results_tables.BEGIN}\nold\n{results_tables.END}\nafter\n")
    assert results_tables.main([str(source), "--write", str(document)]) == 0
    text = document.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    rows = [line for line in text.splitlines() if line.startswith("| toy |")]
    # at 1,050 GPU-h static is half way from 0 to 32 GPUs: 0.15 / 75 s / 350 s; burst a
    # quarter of the way: 0.175 / 85 s / 375 s
    assert rows == [
        "| toy | +5 % | P80 + 16 GPUs | +5.0 % | 0.40x | 0.80x | 0.94x | 0.34x / 0.71x / 0.88x |",
        "| toy | +10 % | none fits | | | | | |",
    ]
    assert results_tables.main([str(source), "--check", str(document)]) == 0
    document.write_text(text.replace("0.40x", "0.41x"))
    assert results_tables.main([str(source), "--check", str(document)]) == 1


def test_declared_notice_runs_become_a_row_per_budget_and_share_with_the_seeds_spread(
    tmp_path: Path,
) -> None:
    """Two seeds at 30 % announced and one run without: each cell is the seeds' min - max
    (one figure when they agree); a point beyond static's sweep says so rather than guess."""
    document = {
        "trace": "toy",
        "reactive": FRONTIER["reactive"],
        "static": FRONTIER["static"],
        "runs": [
            {
                "budget": 5,
                "mix_percent": 0,
                "seed": 1,
                "metrics": metrics(1050, 0.06, 60, 330),
                "groups": [],
            },
            {
                "budget": 5,
                "mix_percent": 30,
                "seed": 1,
                "metrics": metrics(1100, 0.05, 40, 200),
                "groups": [
                    {"group": "ahead", "jobs": 90, "p95_wait_s": 5.0, "mean_wait_s": 1.0},
                    {"group": "later", "jobs": 0, "p95_wait_s": None, "mean_wait_s": None},
                    {"group": "none", "jobs": 300, "p95_wait_s": 250.0, "mean_wait_s": 1.0},
                ],
                "ledger": {"cronjob": {"precision_7d": 1.0, "waste_gpu_hours_7d": 0.0}},
                "hold": {"held_gpu_hours": 3.0, "announced_gpu_hours": 200.0, "withdrawn": 0},
            },
            {
                "budget": 5,
                "mix_percent": 30,
                "seed": 2,
                "metrics": metrics(1100, 0.04, 40, 240),
                "groups": [
                    {"group": "ahead", "jobs": 80, "p95_wait_s": 7.0, "mean_wait_s": 1.0},
                    {"group": "later", "jobs": 4, "p95_wait_s": 60.0, "mean_wait_s": 1.0},
                    {"group": "none", "jobs": 310, "p95_wait_s": 290.0, "mean_wait_s": 1.0},
                ],
                "ledger": {"cronjob": {"precision_7d": 0.95, "waste_gpu_hours_7d": 2.5}},
                "hold": {"held_gpu_hours": 5.0, "announced_gpu_hours": 250.0, "withdrawn": 1},
            },
            {
                "budget": 10,
                "mix_percent": 30,
                "seed": 1,
                "metrics": metrics(1300, 0.0, 1, 9),
                "groups": [],
            },
        ],
    }
    source = tmp_path / "declared-notice-toy.json"
    source.write_text(json.dumps(document))
    page = tmp_path / "doc.md"
    page.write_text(f"{results_tables.NOTICE_BEGIN}\nold\n{results_tables.NOTICE_END}\n")
    assert results_tables.main([str(source), "--write", str(page)]) == 0
    rows = [line for line in page.read_text().splitlines() if line.startswith("| toy |")]
    outside = "n/a (outside the sweep)"
    assert rows == [
        "| toy | +5 % | none | 1 | +5.0% | 0.40x | 0.80x | 0.94x | -18% | - | - | - | - | - |",
        "| toy | +5 % | 30 % | 2 | +10.0% | 0.40x - 0.50x | 0.80x | 0.67x - 0.80x | -50% - -40%"
        " | 80 - 90 jobs, 5 - 7 s | 4 jobs, 60 s | 250 - 290 s | cronjob 95% - 100% (0.0 - 2.5)"
        " | 1.5% - 2.0% |",
        f"| toy | +10 % | 30 % | 1 | +30.0% | {outside} | {outside} | {outside} | -98%"
        " | - | - | - | - | - |",
    ]
    assert results_tables.main([str(source), "--check", str(page)]) == 0
