"""The service layer: wires settings, sources, models and (later) actuators together."""
