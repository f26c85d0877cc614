"""forecaster: predictive prewarming of GPU capacity for Kubernetes clusters run by Karpenter.

The package follows the data path: ``sources`` (Prometheus, CSV) -> ``forecasting`` (quantile
models, backtests, artifacts) -> ``core`` (pure planning: plans with reasons, no I/O, no clock) ->
``actuators`` (Kubernetes: observe, prewarm, coordinate) -> ``reconcile`` (the loop) ->
``service`` (daemon, endpoint, metrics); ``simulation`` replays the same loop on a cluster twin;
``app`` wires settings into objects and ``cli`` parses. ``lint-imports`` keeps the layers.
"""

__version__ = "0.1.0"
