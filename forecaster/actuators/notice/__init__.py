"""Notice sources: GPU work the cluster announces before its pods exist (``base`` is the seam)."""
