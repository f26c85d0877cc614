"""Tests of the test parts in ``forecaster.testing`` (the kube-state-metrics stand-in)."""
