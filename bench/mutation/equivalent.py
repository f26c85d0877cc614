"""Mutants that change no behaviour, each with the reason a reviewer can check.

A mutant is matched by its module, the operator and the stripped source line it changes (line
numbers move; the text of a line rarely does). Listing one here is a claim: the reason says why
no test can tell the mutant from the original.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Equivalent:
    module: str
    operator: str
    line: str
    reason: str


EQUIVALENT: tuple[Equivalent, ...] = ()


def reason_for(module: str, operator: str, line: str) -> str | None:
    """Why the mutant is equivalent, if it is listed."""
    for listed in EQUIVALENT:
        if (listed.module, listed.operator, listed.line) == (module, operator, line.strip()):
            return listed.reason
    return None
