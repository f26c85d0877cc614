"""Every command line the README and ``docs/`` document still parses, with the same flags (a
renamed or removed flag fails here, not in a user's terminal), what the kubectl/helm lines name
exists, every relative link points at a file that exists, and the README stays short.

The ``forecaster`` lines are taken from the documents' code blocks (continuation lines joined,
comments dropped; lines in usage notation with ``[...]`` or ``|`` are not commands). Running
them on small inputs is the job of the tests of each command; the long ``replay`` runs are
``bench/``.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest

from forecaster.cli import build_parser
from tests.deploy.renders import ROOT, by_kind, render

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TEXT = "\n".join(path.read_text() for path in DOCUMENTS)


def _code_lines() -> list[str]:
    lines, block, joined = [], False, ""
    for raw in TEXT.splitlines():
        if raw.startswith("```"):
            block = not block
            continue
        if not block:
            continue
        text = re.sub(r"\s+#.*$", "", raw).rstrip()
        if text.endswith("\\"):
            joined += text[:-1] + " "
            continue
        lines.append((joined + text).strip())
        joined = ""
    return lines


def _commands(tool: str) -> list[str]:
    found = []
    for line in _code_lines():
        words = line.split()  # prose in a code block (the tree) is no command: no shlex here
        if words and words[0].endswith(tool) and "[" not in line and " | " not in line:
            found.append(line)
    return found


INLINE = re.findall(r"`(forecaster (?:pause|resume|cleanup|doctor)[^`]*)`", TEXT)


@pytest.mark.parametrize("line", _commands("forecaster") + INLINE)
def test_documented_forecaster_commands_parse(line: str) -> None:
    words = shlex.split(line)[1:]
    build_parser().parse_args(words)  # SystemExit (exit 2) on an unknown or malformed flag


def test_there_are_documented_commands() -> None:
    assert len(_commands("forecaster")) >= 5 and INLINE


def test_what_the_kubectl_and_helm_lines_name_exists() -> None:
    text = "\n".join(_code_lines())
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
