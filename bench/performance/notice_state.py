"""How large the saved notice state grows with what tenants announce, and what keeps it bounded.

Set-up: 10,000 announced items in flight (``core.notice.MAX_IN_FLIGHT``) of 30 pools, in the
state the daemon saves to its ConfigMap every tick (``reconcile.state``, format 5: the items as
deflated columns, ``reconcile.in_flight_codec``), for three kinds of names:

* ``realistic``: 40 namespaces and CronJob runs with long, structured names;
* ``random-names``: 40 namespaces, CronJob names of 52 random characters (the longest allowed),
  which do not compress - a tenant chooses its names;
* ``random-namespaces``: also 10,000 distinct random 63-character namespaces.

For each: the state's size as format 4 wrote it (one JSON object per item), as format 5 writes
it before ``fit`` and after (``in_flight_codec.fit`` sheds the least urgent items until the
encoded ones fit ``MAX_ENCODED_BYTES``, each charged as not come), the items kept, and the time
to encode and decode (best of 3). A ConfigMap holds 1 MiB.

Run: ``.venv/bin/python -m bench.performance.notice_state``.
"""

from __future__ import annotations

import json
import random
import string
import time
from collections.abc import Callable
from typing import Any

from forecaster.core.notice import AnnouncedItem, InFlight, NoticeLedger
from forecaster.reconcile.in_flight_codec import MAX_ENCODED_BYTES, fit
from forecaster.reconcile.state import ServiceState

NOW = 1_800_000_000
COUNT = 10_000
LETTERS = string.ascii_lowercase + string.digits


def names(kind: str, i: int, rng: random.Random) -> tuple[str, str]:
    """(namespace, CronJob name) of item ``i``."""
    if kind == "realistic":
        return f"research-team-{i % 40:02d}-llm-training", f"nightly-finetune-eval-{i:05d}"
    namespace = f"team-{i % 40:02d}"
    if kind == "random-namespaces":
        namespace = "".join(rng.choices(string.ascii_lowercase, k=63))
    return namespace, "".join(rng.choices(LETTERS, k=52))


def ledger(kind: str) -> NoticeLedger:
    """A ledger following ``COUNT`` items of ``kind`` names, half of them due."""
    rng = random.Random(3)
    found = NoticeLedger()
    for pool in range(30):
        items = []
        for i in range(pool, COUNT, 30):
            namespace, name = names(kind, i, rng)
            key = f"cronjob {namespace}/{name}@2027-01-15T{i // 600 % 24:02d}:{i % 60:02d}:00Z"
            start = NOW + 30 * i
            items.append(
                AnnouncedItem(
                    f"gpu-pool-{pool:02d}",
                    8,
                    2,
                    False,
                    start,
                    start + 600,
                    "cronjob",
                    key,
                    False,
                    namespace,
                )
            )
        found.observe(
            f"gpu-pool-{pool:02d}", items, readable=None, now=NOW, window_seconds=COUNT * 15
        )
    return found


def best(call: Callable[[], Any]) -> float:
    """Best of 3, in milliseconds."""
    times = []
    for _ in range(3):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return min(times) * 1000


def format_4_rows(in_flight: tuple[InFlight, ...]) -> list[dict[str, Any]]:
    """The items as format 4 wrote them: one JSON object each (the state still reads it)."""
    return [
        {
            "pool": f.item.pool,
            "source": f.item.source,
            "key": f.item.key,
            "gpus_per_pod": f.item.gpus_per_pod,
            "pods": f.item.pods,
            "gang": f.item.gang,
            "earliest": f.item.earliest_start,
            "latest": f.item.latest_start,
            "in_history": f.item.in_history,
            "namespace": f.item.namespace,
            "due_since": f.due_since,
            "first_seen": f.first_seen,
        }
        for f in in_flight
    ]


def format_4(in_flight: tuple[InFlight, ...]) -> int:
    """Bytes of the items as format 4 wrote them."""
    return len(json.dumps(format_4_rows(in_flight)))


def main() -> None:
    print(
        f"{COUNT} items in flight; the items' share of the state: {MAX_ENCODED_BYTES // 1024} KiB"
    )
    print("names               format 4   format 5   after fit   kept    encode   decode")
    for kind in ("realistic", "random-names", "random-namespaces"):
        found = ledger(kind)
        before = found.saved()[1]
        whole = json.dumps(ServiceState(last_tick=NOW, notice_in_flight=before).to_dict())
        _, kept, _ = fit(found, now=NOW)
        state = ServiceState(last_tick=NOW, notice_in_flight=kept)
        text = json.dumps(state.to_dict())
        encode = best(lambda: json.dumps(state.to_dict()))  # noqa: B023 (called at once)
        decode = best(lambda: ServiceState.from_dict(json.loads(text)))  # noqa: B023
        print(
            f"{kind:18}  {format_4(before) // 1024:6} KiB {len(whole) // 1024:6} KiB"
            f" {len(text) // 1024:7} KiB  {len(kept):6}  {encode:5.0f} ms {decode:5.0f} ms"
        )


if __name__ == "__main__":
    main()
