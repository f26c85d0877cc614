"""A replay policy from outside the package, through the registry's public seam.

``Constant`` lives only here: registered with ``app.replay_policies.register_policy`` - no
package file names it - it runs in ``replay --policy`` and in ``replay --frontier``, swept at
its knobs, tabled and chosen per budget on the tuning window like burst. It holds the headroom
its knob says, as static does, so its figures must be static's at the same K: the twin, the
metrics and the frontier treat it as any other policy. The built-in sweep's document does not
change with it absent (``chosen_policies`` appears only with a registered policy).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from forecaster.app import replay_policies
from forecaster.cli import main
from forecaster.cli import replay as replay_cli
from forecaster.errors import ConfigError, ForecasterError
from forecaster.simulation.twin import Decision, TwinView
from tests import factories
from tests.factories import jobs_csv, synthetic


@dataclass
class Constant:
    """Holds ``gpus`` of prewarm whatever happens."""

    gpus: int
    name: str = "constant"

    def decide(self, view: TwinView) -> Decision:
        return Decision(self.gpus)


@pytest.fixture
def constant() -> Iterator[str]:
    """``constant:K`` registered for this test only, swept by the frontier at 0 and 32."""
    with replay_policies.POLICIES.trial():
        replay_policies.register_policy(
            "constant",
            lambda asked: Constant(int(asked.knob or 0), name=f"constant:{asked.knob}"),
            knob="K",
            frontier_knobs=(0, 32),
        )
        yield "constant"


@pytest.fixture
def small_frontier(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's wiring with one or two knobs per built-in curve."""
    monkeypatch.setattr(replay_cli, "frontier", factories.small_frontier())


def test_a_registered_policy_runs_in_replay_and_in_the_frontier(
    constant: str, small_frontier: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace, epoch = jobs_csv(tmp_path / "jobs.csv", synthetic(3, seed=7))
    days = ["--epoch", epoch, "--start-day", "0", "--warmup-days", "1", "--end-day", "3"]
    out = tmp_path / "replay.json"
    policy = ["--policy", "constant:32,static:32", "--sweep", ""]
    assert main(["replay", "--jobs", str(trace), *days, *policy, "--json", str(out)]) == 0
    runs = json.loads(out.read_text())
    assert set(runs) == {"constant:32", "static:32"}
    assert runs["constant:32"] == runs["static:32"]  # the twin treats it as any policy
    document = frontier_document(trace, epoch, tmp_path / "frontier.json")
    points = document["policies"][constant]
    assert [p["knob"] for p in points] == [0, 32]
    static = {p["knob"]: p for p in document["static"]}
    for point in points:
        assert point["gpu_hours"] == static[point["knob"]]["gpu_hours"]
        assert point["mean_wait_s"] == static[point["knob"]]["mean_wait_s"]
    assert set(document["chosen_policies"]) == {constant}
    assert [p["knob"] for p in document["tune"]["policies"][constant]] == [0, 32]
    printed = capsys.readouterr().out
    assert (
        "constant:32" in printed and "% budget: constant" in printed
    ) or "no constant knob" in printed


def test_the_built_in_frontier_document_has_no_policies_key(
    small_frontier: None, tmp_path: Path
) -> None:
    trace, epoch = jobs_csv(tmp_path / "jobs.csv", synthetic(3, seed=7))
    document = frontier_document(trace, epoch, tmp_path / "frontier.json")
    assert "policies" not in document and "chosen_policies" not in document


def test_a_policy_name_taken_or_a_knob_it_does_not_take_is_refused(constant: str) -> None:
    with pytest.raises(ConfigError, match="registered already"):
        replay_policies.register_policy("static", lambda asked: Constant(0))
    with pytest.raises(ConfigError, match="without a knob"):
        replay_policies.register_policy("other", lambda asked: Constant(0), frontier_knobs=(1,))
    with pytest.raises(ForecasterError, match="unknown policy 'reactive:3'"):
        replay_policies.replay_policy("reactive:3", None, jobs=None)  # type: ignore[arg-type]


def frontier_document(trace: Path, epoch: str, out: Path) -> Any:
    """``replay --frontier`` of ``trace`` (tuned on day 2, judged on day 3): its JSON."""
    days = ["--frontier", "--workers", "1", "--tune-days", "1-2", "--eval-days", "2-3"]
    assert main(["replay", "--jobs", str(trace), "--epoch", epoch, *days, "--json", str(out)]) == 0
    return json.loads(out.read_text())
