"""The application: settings in, wired objects out (``build``), and the one-shot operations.

``build`` is the composition root - the only module that turns settings into objects. Beside it
the operations the CLI offers that are not the daemon: ``training`` (the weekly CronJob),
``cleanup`` (uninstall and expiry) and ``doctor`` (pre-flight checks). ``service/`` runs the
daemon it builds; ``cli/`` parses, calls and prints.
"""
