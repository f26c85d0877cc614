"""The decision path, once: observe -> forecast (and score) -> plan -> act -> record.

``loop`` holds the tick; each step is a module of its own (``observing``, ``quiet``,
``forecast``, ``scoring``, ``operating_points``), ``records`` the values a tick reads and writes,
``models`` which model forecasts a pool, ``state`` what survives a restart.

The daemon (``service/``) ticks it on the wall clock against Kubernetes and Prometheus; replay and
the embedded default (``simulation/``) tick it in simulated time against the twin. Everything it
touches is a port passed in (demand source, models, observer, actuator, state store, kill switch).
"""
