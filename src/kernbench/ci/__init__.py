"""Continuous-integration helpers.

:mod:`kernbench.ci.github` holds the GitHub side of the PR comment bot and of the tracking issue
(``python -m kernbench.ci.github --help``). Nothing is imported here, so that running the module
with ``-m`` does not import it twice.
"""
