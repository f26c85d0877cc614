"""One registry abstraction (``forecaster.registry``): the names a config may use are known
without importing an adapter, agree with what the adapters register, and a plug-in's name is
known once registered and gone when its test ends."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from forecaster import registry
from forecaster.actuators.notice.registry import SOURCES
from forecaster.actuators.prewarm.registry import BACKENDS
from forecaster.app.replay_policies import POLICIES
from forecaster.app.signals import SIGNALS
from forecaster.cli import main
from forecaster.errors import ConfigError
from forecaster.forecasting.registry import MODELS
from tests.cli.test_cli import config, save


@pytest.mark.parametrize("entries", [BACKENDS, SOURCES, POLICIES, SIGNALS, MODELS])
def test_the_declared_built_in_names_are_what_the_adapters_register(
    entries: registry.Registry[object],
) -> None:
    """``BUILT_IN`` (what settings check names against, importing no adapter) and the entries
    the adapters register under them are the same names, in the same order."""
    assert (
        entries.names()[: len(registry.BUILT_IN[entries.kind])] == (registry.BUILT_IN[entries.kind])
    )
    assert registry.known(entries.kind) == entries.names()


def test_a_plug_in_is_known_while_registered_and_a_name_is_taken_once() -> None:
    with SOURCES.trial():
        toy = SOURCES.get("cronjob")
        SOURCES.register("toy", toy)
        assert "toy" in registry.known(registry.NOTICE_SOURCE) and "toy" in SOURCES
        assert registry.check(registry.NOTICE_SOURCE, "toy") == "toy"
        with pytest.raises(ConfigError, match="notice source 'toy' is registered already"):
            SOURCES.register("toy", toy)
    assert "toy" not in registry.known(registry.NOTICE_SOURCE) and "toy" not in SOURCES
    with pytest.raises(ConfigError, match="prewarm backend 'auto' is registered already"):
        BACKENDS.register("auto", BACKENDS.get("placeholders"))  # reserved: the choice per cluster
    with pytest.raises(ConfigError, match="unknown replay policy 'nope'; known: reactive, static"):
        POLICIES.get("nope")


def test_loading_settings_loads_no_kubernetes_client() -> None:
    """The names are checked through the registry's declarations: no adapter is imported."""
    probe = (
        "import sys, pathlib, forecaster.settings as s;"
        " s.load_settings(pathlib.Path('config/forecaster.yaml'));"
        " print(sorted(m for m in sys.modules if m == 'kubernetes'"
        " or m.startswith(('forecaster.actuators', 'forecaster.sources'))))"
    )
    root = Path(__file__).resolve().parent.parent
    argv = [sys.executable, "-c", probe]
    run = subprocess.run(argv, check=False, cwd=root, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    ("where", "value", "said"),
    [
        ("backend", "nowhere", "unknown prewarm backend 'nowhere'; known: placeholders, "),
        ("notice", "nowhere", "unknown notice source 'nowhere'; known: cronjob, jobset, "),
        ("policy", "nowhere", "'predictive' or 'burst'"),
    ],
)
def test_validate_config_refuses_an_unknown_name_naming_the_known_ones(
    where: str, value: str, said: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = config(tmp_path)
    pools: list[dict[str, object]] = document["pools"]  # type: ignore[assignment]
    if where == "notice":
        document["notice"] = {"sources": ["cronjob", value]}
    else:
        pools[0][where] = value
    code = main(["validate-config", "--config", save(tmp_path, document)])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and said in err, err
