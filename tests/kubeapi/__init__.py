"""Tests of the Kubernetes API double (``forecaster.testing.kubeapi``)."""
