"""What one tenant's announced work that never comes costs the other pools, with and without
the per-namespace notice share (``notice.namespace_share``).

Set-up (``tests/faults/test_notice_spend_share.py``, on the API double): two pools share a
200 GPU-hours/day budget, ``other`` holds a 16-GPU floor, ``shared`` prewarms its forecast; a
zero-quota namespace runs a ``* * * * *`` CronJob on ``shared`` whose runs never make a pod.
Printed: when ``other``'s floor is first cut (the budget spent), in hours - alone, with the
tenant at each share - and the earliest the test allows (alone, less what the default share
buys at the rate the run alone spends).

Run: ``.venv/bin/python -m bench.performance.notice_tenant``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from forecaster.settings import Settings
from forecaster.testing.scenarios import BUDGET, floor_cut


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        alone, spent = floor_cut(tmp, tenant=False)
        rate = spent / (alone / 3600)
        share = Settings.model_fields["notice"].default.namespace_share
        print(f"alone: floor cut at {alone / 3600:.2f} h ({rate:.1f} GPU-hours an hour spent)")
        print(f"earliest allowed with a tenant: {(alone / 3600) - share * BUDGET / rate:.2f} h")
        for each in (share, 0.5, 1.0):
            cut, _ = floor_cut(tmp, tenant=True, share=each)
            print(f"tenant, namespace_share {each:g}: floor cut at {cut / 3600:.2f} h")


if __name__ == "__main__":
    main()
