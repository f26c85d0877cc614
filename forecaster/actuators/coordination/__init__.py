"""What keeps several replicas and the operator in step: leader Leases, the kill switch, the
persisted state and the shared model store."""
