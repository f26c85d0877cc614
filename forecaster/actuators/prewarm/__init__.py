"""Holding capacity ahead of demand: the prewarm backends (placeholder Jobs, CapacityBuffers),
their registry, and the choice of which one a cluster gets."""
