"""Which of cosmic-ray's mutants are not worth a test run: outside the scoped functions, or in
a logging call (a changed number or comparison in a log message is not a defect)."""

from __future__ import annotations

import ast
from pathlib import Path

LOGGERS = frozenset({"log", "logger", "logging"})


def logging_lines(module: Path) -> set[int]:
    """Every line inside a ``log.<level>(...)`` call in ``module``."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in LOGGERS
        ):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def scoped(definition: str | None, functions: set[str]) -> bool:
    """Is a mutant in definition ``definition`` (cosmic-ray's name for it) one we judge?"""
    return definition is not None and definition in functions
