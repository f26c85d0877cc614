"""How fast the command answers before any work: ``forecaster --help``, ``--version`` and a
subcommand's ``--help``, each in a fresh process (median and max of 7 runs, wall time).

The parser imports no model library (the registry and the commands load them after parsing).
Run: ``.venv/bin/python -m bench.cli_startup``
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMAND = str(Path(sys.executable).with_name("forecaster"))
RUNS = 7


def main() -> None:
    for args in (["--help"], ["--version"], ["backtest", "--help"], ["replay", "--help"]):
        times = []
        for _ in range(RUNS):
            began = time.perf_counter()
            subprocess.run([COMMAND, *args], capture_output=True, check=True)
            times.append(time.perf_counter() - began)
        print(
            f"forecaster {' '.join(args):<18} median {statistics.median(times):.3f} s"
            f"  max {max(times):.3f} s  ({RUNS} runs)"
        )


if __name__ == "__main__":
    main()
