"""The announced items in flight, stored compactly in the state ConfigMap (format 5).

Tenants decide how many items are in flight (``core.notice.MAX_IN_FLIGHT`` bounds it) and how
long their names are. One JSON object per item (format 4) passed the ConfigMap's 1 MiB at about
4,500 items: every save was then refused and the ledger stopped being persisted. Here the items
are columns - pools, sources and namespaces by index into name lists, each key without the
``<source> <namespace>/`` it repeats, times as offsets from the earliest - and the columns are
deflated (zlib) and base64-encoded: 10,000 items of realistic long names (40 namespaces, 30
pools) make a state of about 181 KiB (``tests/reconcile/test_in_flight_codec.py``). Names
chosen not to compress (random, the longest Kubernetes allows) do not fit that way: ``fit``
keeps the encoded items within ``MAX_ENCODED_BYTES`` by withdrawing the least urgent ones
(``NoticeLedger.shed``: charged as not come, counted), so the state always fits its ConfigMap.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Sequence
from typing import Any

from forecaster.core.notice import AnnouncedItem, InFlight, NoticeLedger, Outcome
from forecaster.core.notice_use import UseTotals

CODEC = "zlib+columns"
MAX_ENCODED_BYTES = 288 * 1024
"""The items in flight's share of the state ConfigMap: with the pools, the ledger and 2,000
outcomes (of random 63-character namespaces at worst) the state stays under 512 KiB, half the
ConfigMap's 1 MiB."""
SURELY_FITS = 2000
"""At most this many items fit whatever their names (253-character keys): not encoded to check."""


def fit(
    ledger: NoticeLedger, *, now: int
) -> tuple[tuple[Outcome, ...], tuple[InFlight, ...], UseTotals]:
    """``ledger.saved()``, its items in flight first brought within ``MAX_ENCODED_BYTES``."""
    for _ in range(8):  # each round sheds at least the share it is over by
        in_flight = ledger.saved()[1]
        if len(in_flight) <= SURELY_FITS:
            break
        size = len(encode(in_flight)["data"])
        if size <= MAX_ENCODED_BYTES:
            break
        over = len(in_flight) * (size - MAX_ENCODED_BYTES) // size
        ledger.shed(over + 1 + len(in_flight) // 100, now=now)
    return ledger.saved()


def encode(flights: Sequence[InFlight]) -> dict[str, Any]:
    """``flights`` as ``{"codec", "data"}``: deflated columns."""
    items = [f.item for f in flights]
    pools = sorted({i.pool for i in items})
    sources = sorted({i.source for i in items})
    namespaces = sorted({i.namespace for i in items})
    base = min((i.earliest_start for i in items), default=0)
    at = {name: n for n, name in enumerate(pools)}
    source_at = {name: n for n, name in enumerate(sources)}
    namespace_at = {name: n for n, name in enumerate(namespaces)}
    rows = []
    for flight in flights:
        item = flight.item
        prefix = f"{item.source} {item.namespace}/"
        short = item.key.startswith(prefix) and bool(item.namespace)
        rows.append(
            [
                at[item.pool],
                source_at[item.source],
                namespace_at[item.namespace],
                item.key[len(prefix) :] if short else item.key,
                int(short),
                item.gpus_per_pod,
                item.pods,
                int(item.gang) | int(item.in_history) << 1,
                item.earliest_start - base,
                item.latest_start - item.earliest_start,
                None if flight.due_since is None else flight.due_since - base,
                flight.first_seen - base,
            ]
        )
    columns = {
        "pools": pools,
        "sources": sources,
        "namespaces": namespaces,
        "base": base,
        "rows": rows,
    }
    text = json.dumps(columns, separators=(",", ":")).encode()
    return {"codec": CODEC, "data": base64.b64encode(zlib.compress(text, 6)).decode()}


def decode(data: dict[str, Any]) -> tuple[InFlight, ...]:
    """Inverse of ``encode``; raises ``KeyError``/``TypeError``/``ValueError`` (or zlib's
    error) on anything else - the caller reports it as an unreadable state."""
    if data.get("codec") != CODEC:
        raise ValueError(f"unknown codec {data.get('codec')!r}")
    columns = json.loads(zlib.decompress(base64.b64decode(data["data"], validate=True)))
    pools, sources, namespaces = columns["pools"], columns["sources"], columns["namespaces"]
    base = int(columns["base"])
    out = []
    for row in columns["rows"]:
        pool, source, namespace, key, short, per_pod, pods, flags, early, span, due, first = row
        source_name, namespace_name = str(sources[source]), str(namespaces[namespace])
        earliest = base + int(early)
        item = AnnouncedItem(
            str(pools[pool]),
            int(per_pod),
            int(pods),
            bool(int(flags) & 1),
            earliest,
            earliest + int(span),
            source_name,
            f"{source_name} {namespace_name}/{key}" if short else str(key),
            bool(int(flags) & 2),
            namespace_name,
        )
        out.append(InFlight(item, None if due is None else base + int(due), base + int(first)))
    return tuple(out)
