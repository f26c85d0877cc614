"""Pure core: data types and decisions. No I/O, no clock reads, no logging, no network clients."""
