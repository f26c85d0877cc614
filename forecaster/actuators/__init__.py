"""Outbound adapters: the only package that imports the Kubernetes client.

By job: ``observe/`` reads the cluster into pool snapshots, ``notice/`` reads work announced
before its pods exist, ``prewarm/`` holds capacity (the backends and their registry),
``coordination/`` keeps replicas and the operator in step; ``kube`` (the client),
``manifests``, ``labels``, ``nodepools``, ``guardrails``, ``events`` and ``actuator`` (plans to
writes) are shared.

Kubernetes JSON stays inside this package; the rest of forecaster sees ``core`` dataclasses.
Every writer takes ``dry_run`` and logs each write with the object and the body sent.
"""
