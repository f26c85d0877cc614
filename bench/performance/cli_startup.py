"""How fast the commands answer: the parser (``--help``, ``--version``, a subcommand's
``--help``) and the one-shot commands an operator runs in an incident - ``validate-config``,
``check-query``, ``doctor``, ``pause``, ``resume``, ``cleanup`` - each in a fresh process
(median and max of 7 runs, wall time), the machine's load printed beside them.

The one-shot commands run against the API double (no earlier leader, no CapacityBuffers) and a
real Prometheus holding an hour of one pool's demand; they load no model library
(``forecaster.cli.oneshot``), so the target is a median of at most 3 s each.
Run: ``.venv/bin/python -m bench.performance.cli_startup``
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from forecaster.testing.fakes import POOL, settings
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.prometheus_server import Series, running_prometheus

COMMAND = str(Path(sys.executable).with_name("forecaster"))
RUNS = 7
TARGET_SECONDS = 3.0


def timed(args: list[str]) -> tuple[float, float]:
    """Median and max wall time of ``forecaster <args>`` over ``RUNS`` fresh processes."""
    times = []
    for _ in range(RUNS):
        began = time.perf_counter()
        subprocess.run([COMMAND, *args], capture_output=True, check=False)
        times.append(time.perf_counter() - began)
    return statistics.median(times), max(times)


def report(args: list[str], *, target: float | None = None) -> None:
    median, worst = timed(args)
    verdict = "" if target is None else ("  ok" if median <= target else "  OVER TARGET")
    shown = " ".join(a for a in args if not a.startswith(("/", "http")))
    print(
        f"forecaster {shown[:40]:<40} median {median:.2f} s  max {worst:.2f} s"
        f"  load {os.getloadavg()[0]:.2f}{verdict}"
    )


def one_shot(workdir: Path) -> None:
    now = int(time.time())
    demand = Series(
        "gpus_requested", {"pool": POOL}, [(t, 16.0) for t in range(now - 3600, now, 60)]
    )
    with running_prometheus(workdir / "prometheus", [demand]) as url, KubeApiDouble() as api:
        api.clock = float(now)
        ClusterSim(api).busy_pool(POOL)
        document = settings(workdir).model_dump(mode="json")
        document["source"]["prometheus"].update(url=url, retries=0)
        document["pools"][0]["query"] = f'gpus_requested{{pool="{POOL}"}}'
        config = workdir / "forecaster.json"
        config.write_text(json.dumps(document))
        c, k = ["--config", str(config)], ["--kube-host", api.url]
        for args in (
            ["validate-config", *c],
            ["check-query", *c],
            ["doctor", *c, *k],
            ["pause", "--reason", "bench", "--force", *c, *k],
            ["resume", *c, *k],
            ["cleanup", "--namespace", "forecaster", *k],
        ):
            report(args, target=TARGET_SECONDS)


def main() -> None:
    for args in (["--help"], ["--version"], ["backtest", "--help"], ["replay", "--help"]):
        report(args)
    with tempfile.TemporaryDirectory() as workdir:
        one_shot(Path(workdir))


if __name__ == "__main__":
    main()
