"""Ctrl-C in a long replay keeps what finished: one line, exit 130, JSON and report marked
partial, no traceback - whether the replays run in worker processes (``--frontier``) or one
after another (a plain replay).

The command runs as a real process in its own session; Ctrl-C is SIGINT to its whole process
group, as a terminal sends it (the workers get it too).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import jobs_csv, synthetic


@pytest.mark.parametrize(
    ("flags", "wait_for"),
    [
        (["--frontier", "--tune-days", "1-2", "--eval-days", "2-3", "--workers", "2"], b"done ("),
        (
            ["--policy", "reactive,static,predictive", "--warmup-days", "1", "--end-day", "3"],
            b"predictive",
        ),
    ],
    ids=["frontier", "plain"],
)
def test_ctrl_c_writes_what_finished_and_exits_130(
    tmp_path: Path, flags: list[str], wait_for: bytes
) -> None:
    trace, epoch = jobs_csv(tmp_path / "jobs.csv", synthetic(3, seed=7))
    out, report = tmp_path / "out.json", tmp_path / "out.html"
    main = "import sys; from forecaster.cli import main; sys.exit(main())"
    command = [sys.executable, "-c", main, "replay", "--jobs", str(trace)]
    command += ["--epoch", epoch, *flags, "--json", str(out), "--report", str(report)]
    with subprocess.Popen(command, stderr=subprocess.PIPE, start_new_session=True) as child:
        assert child.stderr is not None
        seen = b""
        while wait_for not in seen:  # a replay finished: the first (frontier), two (plain)
            chunk = child.stderr.read1(4096)
            assert chunk, seen.decode()
            seen += chunk
        os.killpg(child.pid, signal.SIGINT)
        rest = child.stderr.read()
        assert child.wait(timeout=60) == 130
    lines = [ln for ln in rest.decode().splitlines() if not ln.startswith("frontier: ")]
    last = [ln for ln in lines if ln.startswith("forecaster:")]
    assert "Traceback" not in rest.decode()
    assert len(last) == 1 and last[0].startswith("forecaster: interrupted: "), rest.decode()
    assert "(partial)" in last[0]
    document = json.loads(out.read_text())
    assert document["partial"] is True
    assert 0 < len(document["finished"]) < document["runs"]
    assert "partial" in report.read_text()
