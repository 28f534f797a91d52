"""Configuration: bench.yaml and suite files, sweeps, and the safe expression language."""
