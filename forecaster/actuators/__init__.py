"""Outbound adapters: the only package that imports the Kubernetes client.

Kubernetes JSON stays inside this package; the rest of forecaster sees ``core`` dataclasses.
Every writer takes ``dry_run`` and logs each write with the object and the body sent.
"""
