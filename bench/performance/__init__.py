"""Performance benchmarks: speed and memory of the product's own paths, printed as figures."""
