"""Durations as people type them: ``90s``, ``15m``, ``1h``, ``7d`` - parsed and printed."""

from __future__ import annotations

import argparse
import re

DAY = 86400
"""Seconds in a day: the one constant every module uses."""
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> int:
    """'15m' -> 900, '1h' -> 3600, '2d' -> 172800, '90' or '90s' -> 90.

    Raises ``argparse.ArgumentTypeError`` so argparse reports it as a usage error.
    """
    match = _DURATION.match(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"bad duration {text!r} (use e.g. 90s, 15m, 1h, 7d)")
    return int(float(match.group(1)) * _UNIT_SECONDS[match.group(2)])


def format_duration(seconds: float) -> str:
    """900 -> '15m', 86400 -> '1d', 90 -> '90s'."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
