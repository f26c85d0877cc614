"""The application: settings and request values in, wired objects out, and the one-shot operations.

``build`` is the daemon's composition root; ``build_replay`` the replay's (a configured pool or a
``SimulatedPool``), ``connect`` the light part one-shot commands need. The registries the product
grows through live here or below: ``replay_policies``, ``signals``, the prewarm backends
(``actuators.prewarm.registry``) and the models (``forecasting.registry``). Beside them the
operations the CLI offers that are not the daemon: ``training`` (the weekly CronJob),
``cleanup`` (uninstall and expiry), ``doctor`` (pre-flight checks), ``history`` (the pool's own
history for a replay) and ``replay_runs`` (replays with progress, and their tables).
``service/`` runs the daemon it builds; ``cli/`` parses, calls and prints.
"""
