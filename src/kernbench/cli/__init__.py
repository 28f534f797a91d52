"""The command line, the only room that prints: ``parser`` builds argparse from the option table
(:mod:`kernbench.config.options`), ``run`` and ``commands`` call :mod:`kernbench.api`,
``console`` and ``progress`` write to the terminal, ``main`` maps errors to exit codes."""
