"""Running cases: the runner, worker processes and their isolation, limits, resume."""
