"""Helpers the tests share: kernel trees, processes, git, fake services."""
