"""Experiments: what a design choice buys on the traces (replays, frontiers, notice), printed as
tables that docs/results.md and docs/findings.md quote."""
