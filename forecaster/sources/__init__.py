"""Inbound adapters: where demand history comes from (CSV files, Prometheus)."""
