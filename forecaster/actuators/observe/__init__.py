"""Reading the cluster: pool snapshots, the pod watch, attribution of pods to pools, Kueue's
quota room and the measured lead time. Nothing here writes."""
