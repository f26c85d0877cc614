"""Test helpers: a real Prometheus server, sample data loaders."""
