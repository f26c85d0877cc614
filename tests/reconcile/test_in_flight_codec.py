"""The items in flight are stored compactly: 10,000 with long names fit the state ConfigMap.

A ConfigMap holds 1 MiB; one JSON object per item (format 4) passed it at about 4,500 items.
Here: 10,000 items of 40 namespaces with long, realistic names (CronJob runs of 30 pools) make
a whole state under 512 KiB that reads back equal, and none is shed; 10,000 names chosen not
to compress (random, the longest allowed) are shed least urgent first - charged as not come,
counted - until they fit; a format-4 list is still read on upgrade; a damaged blob is refused,
never read as "nothing in flight" (its held GPU-hours would go uncharged).
"""

from __future__ import annotations

import json
import random
import string

import pytest

from bench.performance.notice_state import format_4_rows
from forecaster.core.notice import MAX_IN_FLIGHT, AnnouncedItem, InFlight, NoticeLedger
from forecaster.reconcile.in_flight_codec import MAX_ENCODED_BYTES, encode, fit
from forecaster.reconcile.state import ServiceState, StateFormatError

T = 1_800_000_000
LIMIT = 512 * 1024


def flights(count: int) -> tuple[InFlight, ...]:
    out = []
    for i in range(count):
        namespace = f"research-team-{i % 40:02d}-large-language-model-training"
        name = f"nightly-finetune-llama-70b-checkpoint-eval-{i:05d}"
        when = f"2027-01-15T{(i // 60) % 24:02d}:{i % 60:02d}:00Z"
        item = AnnouncedItem(
            f"gpu-pool-h100-{i % 30:02d}",
            8,
            1 + i % 4,
            i % 3 == 0,
            T + 7 * i,
            T + 7 * i + 600,
            "cronjob",
            f"cronjob {namespace}/{name}@{when}",
            False,
            namespace,
        )
        out.append(InFlight(item, None if i % 2 else T + i, T - 30 - i))
    return tuple(out)


def test_ten_thousand_items_in_flight_fit_and_read_back_equal() -> None:
    assert MAX_IN_FLIGHT >= 10_000
    state = ServiceState(last_tick=T, notice_in_flight=flights(10_000))
    text = json.dumps(state.to_dict())
    assert len(text.encode()) < LIMIT, len(text)
    again = ServiceState.from_dict(json.loads(text))
    assert again.notice_in_flight == state.notice_in_flight


def test_a_format_4_list_is_read_on_upgrade() -> None:
    (flight,) = flights(1)
    data = ServiceState(last_tick=T).to_dict()
    data["format_version"] = 4
    data["notice_in_flight"] = format_4_rows((flight,))
    assert ServiceState.from_dict(data).notice_in_flight == (flight,)


@pytest.mark.parametrize(
    "damaged",
    [
        {"codec": "zlib+columns", "data": "not base64!"},
        {"codec": "zlib+columns", "data": "aGVsbG8="},  # base64 of no zlib stream
        {"codec": "brotli", "data": ""},
    ],
)
def test_a_damaged_blob_is_refused(damaged: dict[str, str]) -> None:
    data = ServiceState(last_tick=T).to_dict()
    data["notice_in_flight"] = damaged
    with pytest.raises(StateFormatError, match="items in flight are unreadable"):
        ServiceState.from_dict(data)


def ledger_of(items: tuple[InFlight, ...]) -> NoticeLedger:
    ledger = NoticeLedger()
    ledger.observe("p", [f.item for f in items], readable=None, now=T, window_seconds=600)
    return ledger


def random_names(count: int) -> tuple[InFlight, ...]:
    """Names a tenant chose not to compress: random, as long as Kubernetes allows."""
    rng = random.Random(7)
    letters = string.ascii_lowercase + string.digits
    out = []
    for i in range(count):
        namespace = "".join(rng.choices(string.ascii_lowercase, k=63))
        name = "".join(rng.choices(letters, k=52))
        key = f"cronjob {namespace}/{name}@2027-01-15T07:05:00Z"
        item = AnnouncedItem("p", 8, 1, False, T + i, T + i + 600, "cronjob", key, False, namespace)
        out.append(InFlight(item, None, T))
    return tuple(out)


def test_names_that_do_not_compress_are_shed_least_urgent_first_to_fit() -> None:
    ledger = ledger_of(random_names(10_000))
    before = len(ledger.saved()[1])
    outcomes, in_flight, _ = fit(ledger, now=T)
    assert len(encode(in_flight)["data"]) <= MAX_ENCODED_BYTES
    shed = before - len(in_flight)
    assert shed > 0 and ledger.dropped == {"cronjob": shed}
    assert [o.came for o in outcomes] == [False] * shed  # charged as not come
    kept = max(f.item.earliest_start for f in in_flight)
    assert all(ledger.ended("p", o.key) for o in outcomes)
    assert kept < min(T + i for i in range(before) if i >= len(in_flight))  # the soonest kept
    state = ServiceState(last_tick=T, notice=outcomes, notice_in_flight=in_flight)
    assert len(json.dumps(state.to_dict()).encode()) < LIMIT


def test_names_that_compress_are_all_kept() -> None:
    ledger = ledger_of(flights(10_000))
    _, in_flight, _ = fit(ledger, now=T)
    assert len(in_flight) == 10_000 and ledger.dropped == {}
