"""The running service: the daemon over one reconcile loop (``daemon``), its schedule and leader
election in a cluster (``scheduler``), the embedded default on the twin (``embedded``), and what
it shows - the inspection endpoint (``http``), its page (``page``) and metrics (``metrics``).
Wiring is ``app/``; the service only runs what it is given."""
