"""How long the notice trust check takes as tenants' outcomes grow (``NoticeLedger.distrusted``).

Set-up: N resolved outcomes of one source spread over the last 8 days across 40 namespaces (one
namespace's items never come, the others' mostly do) - the trust check runs once per tick and
a tenant decides N (a ``* * * * *`` CronJob alone resolves 1,440 items a day). Each figure is the
best of 3 uncached calls of ``core.notice.distrusted_keys`` (the daemon's), beside the scan it
replaced (``scan``: every outcome at every moment of the last day, per trust key; run only while
it takes under a minute), and the two answers must agree.

Run: ``.venv/bin/python -m bench.performance.trust_check [--sizes 10000 100000]``.
"""

from __future__ import annotations

import argparse
import random
import time

from forecaster.core.notice import (
    DISTRUST_AFTER_SECONDS,
    TRUST_MIN_OUTCOMES,
    TRUST_THRESHOLD,
    TRUST_WINDOW_SECONDS,
    Outcome,
    distrusted_keys,
)

NOW = 1_800_000_000
NAMESPACES = 40


def outcomes(n: int, *, seed: int = 1) -> list[Outcome]:
    """``n`` outcomes of the ``cronjob`` source over the last 8 days (see the module docstring)."""
    rng = random.Random(seed)
    span = TRUST_WINDOW_SECONDS + DISTRUST_AFTER_SECONDS
    out = []
    for at in sorted(rng.randrange(NOW - span, NOW) for _ in range(n)):
        namespace = f"team-{rng.randrange(NAMESPACES)}"
        came = namespace != "team-0" and rng.random() < 0.9
        out.append(Outcome("cronjob", "gpu-a", "", came, at, 0.0, namespace=namespace))
    return out


def scan(found: list[Outcome], *, now: int) -> dict[str, str]:
    """The check as it was: each key's precision recomputed from every outcome at every moment
    of the last day it could change (the reference the daemon's answer must equal)."""
    out = {}
    for key in sorted({o.trust_key for o in found}):
        mine = [o for o in found if o.trust_key == key]
        start = now - DISTRUST_AFTER_SECONDS
        changes = {t for o in mine for t in (o.at, o.at + TRUST_WINDOW_SECONDS) if start < t <= now}
        moments = [start, *sorted(changes), now]
        if all(_below(mine, at) for at in moments):
            value, count = _precision(mine, now=now)
            out[key] = (
                f"precision {value:.2f} over {count} items in 7 days < {TRUST_THRESHOLD} for a day"
            )
    return out


def _precision(found: list[Outcome], *, now: int) -> tuple[float, int]:
    mine = [o for o in found if now - TRUST_WINDOW_SECONDS < o.at <= now]
    return (sum(o.came for o in mine) / len(mine), len(mine)) if mine else (0.0, 0)


def _below(found: list[Outcome], at: int) -> bool:
    value, count = _precision(found, now=at)
    return count >= TRUST_MIN_OUTCOMES and value < TRUST_THRESHOLD


def best_of(calls: int, run: object) -> tuple[float, object]:
    """The fastest of ``calls`` runs of ``run()`` in seconds, and its answer."""
    best, answer = float("inf"), None
    for _ in range(calls):
        began = time.perf_counter()
        answer = run()  # type: ignore[operator]
        best = min(best, time.perf_counter() - began)
    return best, answer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    args = parser.parse_args(argv)
    print("outcomes  distrusted_keys  scan (the check it replaced)  keys cut")
    scan_fast_enough = True
    for n in args.sizes:
        found = outcomes(n)
        fast, answer = best_of(3, lambda found=found: distrusted_keys(found, now=NOW))
        if scan_fast_enough:
            slow, reference = best_of(1, lambda found=found: scan(found, now=NOW))
            assert reference == answer, (reference, answer)
            scan_fast_enough = slow < 60
            slow_text = f"{slow * 1000:12.0f} ms"
        else:
            slow_text = "     (skipped)"
        print(f"{n:8d}  {fast * 1000:12.1f} ms  {slow_text}  {sorted(answer)}")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
