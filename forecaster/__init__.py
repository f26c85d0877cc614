"""forecaster: predictive prewarming of GPU capacity for Kubernetes clusters run by Karpenter.

The package follows the data path: ``sources`` (Prometheus, CSV) -> ``forecasting`` (P95 models,
backtests, artifacts) -> ``core`` (pure planning) -> ``actuators`` (Kubernetes) -> ``service``.
"""

__version__ = "0.1.0"
