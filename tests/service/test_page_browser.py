"""The inspection page in a real headless Chromium: it renders, every chart has data, and it reads
at a glance.

Starts the endpoint with uvicorn on a free loopback port over a daemon that has ticked (what-if,
the embedded twin, a daemon acting on the API double, and a forecast-only one), lets Chromium
load the page (no network beyond loopback), checks in the DOM that each chart drew points -
demand with past forecasts, error/waste budgets, prewarm held - that the overview and the FinOps
figures are there in dollars, and that the screenshot holds the charts' colours (actual demand,
P95 forecast, prewarm, error budget line). Read at a glance: no two texts a chart draws overlap
(each records its boxes), value ticks come from the 1-2-5 series, shares stop at 100 %, a pool's
charts share one time range, and a forecast-only pool says what it *would* prewarm.
"""

from __future__ import annotations

import html
import itertools
import json
import math
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from PIL import Image

from forecaster.app.build import build_embedded
from forecaster.core.notice import Outcome
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.settings import load_settings
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.prometheus_server import free_port
from tests.factories import reconciler

ROOT = Path(__file__).resolve().parents[2]
NEVER_CAME = Outcome(
    "cronjob", POOL, "cronjob team-a/x@t", False, T0 - 600, 8.0, gpus=8, namespace="team-a"
)

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--window-size=1280,900",
    "--virtual-time-budget=8000",
]


@pytest.fixture
def served(daemon: Daemon) -> Iterator[str]:
    for minute in range(30, -1, -1):
        daemon.reconcile(T0 - 60 * minute)
    yield from serve(daemon)


@pytest.fixture
def served_twin(tmp_path: Path) -> Iterator[str]:
    """The README's main command path: the daemon on the cluster twin."""
    settings = load_settings(ROOT / "config" / "forecaster.yaml", env={})
    twin = settings.twin.model_copy(
        update={"warmup_days": 8, "models": ("persistence", "quantreg-raw")}
    )
    forecast = settings.forecast.model_copy(update={"min_history_days": 7})
    run = build_embedded(
        settings.model_copy(update={"twin": twin, "forecast": forecast}), models_dir=tmp_path / "m"
    )
    run.step(run.twin.now + 6 * 3600)
    yield from serve(run.daemon)


def served_on_the_double(tmp_path: Path, *, forecast_only: bool = False) -> Iterator[str]:
    """A daemon that ticked for 30 minutes on the API double's busy pool, served (the URL is
    yielded while the double still runs); ``forecast_only``: its pool plans and holds nothing."""
    pool = {
        "name": POOL,
        "gpus_per_node": 8,
        "max_prewarm_gpus": 32,
        "forecast_only": forecast_only,
    }
    changes: dict[str, object] = {"pools": [pool]} if forecast_only else {}
    with KubeApiDouble(capacity_buffers=True) as api:
        api.clock = float(T0 - 1800)
        busy_cluster = ClusterSim(api)
        busy_cluster.busy_pool(POOL)
        source = LiveSource(T0 - 2 * 86400, calm_history())
        daemon = Daemon(reconciler=reconciler(tmp_path, api, source, **changes), pools=(POOL,))
        for minute in range(30, -1, -1):
            api.clock = float(T0 - 60 * minute)
            busy_cluster.step()
            if minute == 0:  # a tenant's run that never came: the top namespaces' table
                daemon.reconciler.notice_ledger.outcomes.append(NEVER_CAME)
            daemon.reconcile(T0 - 60 * minute)
        if forecast_only:
            assert api.objects("jobs", "forecaster") == []
        yield from serve(daemon)


@pytest.fixture
def served_cluster(tmp_path: Path) -> Iterator[str]:
    """A daemon that observes and acts on the API double (real placeholders, real spend)."""
    yield from served_on_the_double(tmp_path)


@pytest.fixture
def served_forecast_only(tmp_path: Path) -> Iterator[str]:
    """A forecast-only pool on the API double: it plans, holds nothing."""
    yield from served_on_the_double(tmp_path, forecast_only=True)


def serve(daemon: Daemon) -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(daemon), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/"
    server.should_exit = True
    thread.join(timeout=5)


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise RuntimeError("chromium not found: run scripts/setup (installs Debian's 'chromium')")
    return path


def canvases(dom: str) -> dict[str, dict[str, str]]:
    """Each canvas's data-* attributes, unescaped."""
    out = {}
    for tag in re.findall(r"<canvas [^>]*>", dom):
        attrs = {k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', tag)}
        out[attrs["id"]] = attrs
    return out


def overlapping(boxes: list[list[float | str]]) -> list[tuple[str, str]]:
    """Pairs of text boxes ([left, top, width, height, text]) that intersect."""
    pairs = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            ax, ay, aw, ah = (float(v) for v in a[:4])
            bx, by, bw, bh = (float(v) for v in b[:4])
            if ax < bx + bw and bx < ax + aw and ay < by + bh and by < ay + ah:
                pairs.append((str(a[4]), str(b[4])))
    return pairs


def one_two_five(ticks: list[float]) -> bool:
    """Evenly spaced from 0 by a step of 1, 2 or 5 times a power of ten."""
    step = ticks[1] - ticks[0]
    mantissa = step / 10 ** math.floor(math.log10(step))
    return (
        ticks[0] == 0
        and any(abs(mantissa - m) < 1e-6 for m in (1, 2, 5))
        and all(abs(b - a - step) < 1e-6 * step for a, b in itertools.pairwise(ticks))
    )


def dump(served: str, tmp_path: Path) -> str:
    return subprocess.run(
        [
            chromium(),
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            served,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


@pytest.mark.parametrize("fixture", ["served_twin", "served_forecast_only"])
def test_the_page_reads_at_a_glance(
    fixture: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    dom = dump(request.getfixturevalue(fixture), tmp_path)
    charts = canvases(dom)
    ranges = set()
    for name in ("chart", "budget", "held"):
        chart = charts[name]
        boxes = json.loads(chart["data-labels"])
        assert len(boxes) >= 8 and overlapping(boxes) == [], (name, overlapping(boxes))
        ticks = json.loads(chart["data-ticks"])
        assert one_two_five(ticks), (name, ticks)
        ranges.add(chart["data-xrange"])
    assert max(json.loads(charts["budget"]["data-ticks"])) == 100  # a share stops at 100 %
    assert len(ranges) == 1, ranges  # one time axis for the pool's charts
    shown = "".join(re.findall(r'<div id="(?:overview|plan)">(.*?)</div>', dom, re.S))
    if fixture == "served_forecast_only":
        assert "would prewarm" in shown and "prewarm target" not in shown, shown
    else:
        assert "would prewarm" not in shown and "prewarm target" in shown, shown


@pytest.mark.parametrize("fixture", ["served", "served_twin", "served_cluster"])
def test_page_renders_a_chart_with_data(
    fixture: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    served = request.getfixturevalue(fixture)
    profile = tmp_path / "profile"
    dom = subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", served],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    drawn = {
        m.group(1): int(m.group(2))
        for m in re.finditer(r'<canvas id="(\w+)"[^>]*?data-points="(\d+)"', dom)
    }
    assert drawn.get("chart", 0) > 50 and drawn.get("budget", 0) > 10, drawn
    assert drawn.get("held", 0) > 10, drawn
    past = re.search(r'id="chart"[^>]*data-forecast-points="(\d+)"', dom)
    assert past is not None and int(past.group(1)) > 0, "no past forecast drawn"
    assert "predictive" in dom and "prewarm target" in dom
    assert 'data-finops="1"' in dom and "cost per used GPU-hour" in dom
    assert re.search(r"Cluster, last 24 h: nodes \$\d", dom), "no cluster FinOps in dollars"
    assert re.search(r"<td>\d+ s / (not measured yet|\d+ s \(node \d+ s)", dom), "no lead"
    assert "loading: waiting" not in dom or 'id="loading" style="display: none;"' in dom
    notice = re.search(r'<div id="announced">(.*?)</div>', dom, re.S)
    assert notice is not None and notice.group(1), "no announced-work section"
    if fixture == "served_cluster":  # the daemon on the API double reads CronJobs (none yet)
        assert "<td>cronjob</td><td>trusted</td>" in notice.group(1), notice.group(1)
        assert "<td>jobset</td><td>not installed</td>" in notice.group(1), notice.group(1)
        assert "<td>team-a</td><td>0% of 1</td><td>8.0</td><td>8.0</td>" in notice.group(1)
    shot = tmp_path / "page.png"
    subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--screenshot={shot}", served],
        capture_output=True,
        timeout=120,
        check=True,
    )
    image = Image.open(shot).convert("RGB")
    colours = {c for _, c in image.getcolors(maxcolors=1 << 20) or []}

    def near(target: tuple[int, int, int]) -> bool:
        return any(sum(abs(a - b) for a, b in zip(c, target, strict=True)) < 40 for c in colours)

    assert near((0x22, 0x22, 0x22))  # actual demand line
    assert near((0xEE, 0x77, 0x33))  # P95 forecast
    assert near((0xF6, 0xC6, 0xCC)) or near((0xEE, 0x66, 0x77))  # prewarm area (translucent)
    assert near((0x22, 0x88, 0x33))  # error budget line
