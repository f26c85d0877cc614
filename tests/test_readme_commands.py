"""Every command line the README and ``docs/`` document still parses, with the same flags (a
renamed or removed flag fails here, not in a user's terminal), what the kubectl/helm lines name
exists, every relative link points at a file that exists, and the README stays short.

The ``forecaster`` lines are taken from the documents' code blocks
(``forecaster.testing.documents``). Running them on small inputs is the job of the tests of each
command; the long ``replay`` runs are ``bench/``: the README's own,
``bench.performance.own_history``.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest

from forecaster.cli import build_parser
from forecaster.testing.documents import DOCUMENTS, code_lines, commands, readme_replays
from tests.deploy.renders import ROOT, by_kind, render

TEXT = "\n".join(path.read_text() for path in DOCUMENTS)


INLINE = re.findall(r"`(forecaster (?:pause|resume|cleanup|doctor)[^`]*)`", TEXT)


@pytest.mark.parametrize("line", commands("forecaster", TEXT) + INLINE)
def test_documented_forecaster_commands_parse(line: str) -> None:
    words = shlex.split(line)[1:]
    build_parser().parse_args(words)  # SystemExit (exit 2) on an unknown or malformed flag


def test_the_readme_replays_are_the_ones_the_bench_times() -> None:
    """Each replay the README gives runs a pool's own history: the command
    ``bench.performance.own_history`` backfills a Prometheus for and times (5 minutes on 2
    cores at most); a trace replay there would go untimed."""
    replays = readme_replays()
    assert replays
    for line in replays:
        args = build_parser().parse_args(shlex.split(line)[1:])
        assert args.config and args.pool and args.days, line


def test_there_are_documented_commands() -> None:
    assert len(commands("forecaster", TEXT)) >= 5 and INLINE


def test_what_the_kubectl_and_helm_lines_name_exists() -> None:
    text = "\n".join(code_lines(TEXT))
    objects = render("live")
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    for cronjob in re.findall(r"--from=cronjob/([\w-]+)", text):
        assert ("CronJob", cronjob) in names, cronjob
    for service, port in re.findall(r"port-forward svc/([\w-]+) (\d+):", text):
        if service == "prometheus-operated":
            continue  # the user's Prometheus, not ours
        (svc,) = [o for o in by_kind(objects, "Service") if o["metadata"]["name"] == service]
        assert int(port) in [p["port"] for p in svc["spec"]["ports"]]
    schema = json.loads(
        (ROOT / "deploy" / "helm" / "forecaster" / "values.schema.json").read_text()
    )
    for key in re.findall(r"--set ([\w.]+)=", text):
        node = schema
        for part in key.split("."):
            node = node["properties"][part]  # KeyError: the README sets a value the chart lacks


def test_the_readme_is_short_and_its_links_hold() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200
    for path in DOCUMENTS:
        prose = re.sub(r"`[^`\n]*`", "", path.read_text())  # code spans hold no links
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", prose):
            assert (path.parent / target).exists(), f"{path.name}: broken link {target}"


def test_no_issue_numbers_in_the_documents() -> None:
    for path in DOCUMENTS:
        assert not re.search(r"\bissue \d+|#\d{2,}\b", path.read_text(), re.I), path.name


def test_every_path_the_documents_name_exists() -> None:
    """A file moved or renamed fails here, not in a new engineer's first hour."""
    for path in DOCUMENTS:
        named = re.findall(
            r"`((?:forecaster|scripts|bench|deploy|tests|config|data)/[\w./-]+)`", path.read_text()
        )
        for name in named:
            if "*" not in name and "<" not in name:
                assert (ROOT / name.rstrip("/.")).exists(), f"{path.name}: {name}"
