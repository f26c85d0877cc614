"""The parts tests and benches share, shipped with the package (installed with the ``testing``
extra, left out of the image): the Kubernetes API double (``kubeapi``), a real Prometheus
backfilled with ``promtool`` (``prometheus_server``), the kube-state-metrics stand-in and the
histories it exports, fakes of the daemon's inputs and the tenant objects the scenarios use.

Nothing else in the package imports it (an import contract); it is not product code a cluster
runs, but what the checks of that code stand on.
"""
