"""Small measuring helpers shared by the benchmarks."""

from __future__ import annotations


def rss_mib() -> float:
    """Resident set size of this process now (Linux /proc), in MiB."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")
