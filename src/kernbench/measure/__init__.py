"""Measuring one case: the protocol, backends (timers, sync), metrics collectors."""
