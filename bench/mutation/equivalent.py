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
    """Why the mutant is equivalent, if it is listed (or of a kind that always is)."""
    line = line.strip()
    signature = line == "*," or (line.startswith("def ") and ", *," in line)
    if operator.startswith("core/ReplaceBinaryOperator_Mul_") and signature:
        # cosmic-ray reads a signature's bare ``*`` as multiplication; ``/`` there makes the
        # parameters before it positional-only, and every caller passes those by position (a
        # caller by keyword would fail mypy and the tests)
        return "the keyword-only marker of a signature made positional-only (callers unchanged)"
    for listed in EQUIVALENT:
        if (listed.module, listed.operator, listed.line) == (module, operator, line.strip()):
            return listed.reason
    return None
