"""The decision path, once: observe -> fetch -> forecast -> score -> plan -> act -> record.

The daemon (``service/``) ticks it on the wall clock against Kubernetes and Prometheus; replay and
the embedded default (``simulation/``) tick it in simulated time against the twin. Everything it
touches is a port passed in (demand source, models, observer, actuator, state store, kill switch).
"""
