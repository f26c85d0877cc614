"""An HTTP test double of the Kubernetes API server for the resources forecaster touches.

The real ``kubernetes`` client talks to it over HTTP. See ``server.py`` for the API surface,
``store.py`` for object semantics, ``schemas.py`` for validation and ``cluster.py`` for the
minimal scheduler + Karpenter it plays.
"""
