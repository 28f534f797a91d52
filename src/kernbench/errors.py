"""The one error type users see, and the exit codes the CLI maps it to."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURES = 1
EXIT_USAGE = 2


class KernbenchError(Exception):
    """An error with a message meant for the user; the CLI prints it and exits with `exit_code`."""

    exit_code: int = EXIT_USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(KernbenchError):
    """A configuration file (bench.yaml, pyproject.toml, a condition) is wrong.

    The message names the file, the key and what was expected.
    """

    def __init__(self, source: str, key: str, expected: str, got: object | None = None) -> None:
        where = f"{source}: key '{key}'" if key else source
        text = f"{where}: expected {expected}"
        if got is not None:
            text += f" (got {got!r})"
        super().__init__(text)
        self.source = source
        self.key = key
        self.expected = expected


class UnsupportedPrecision(Exception):
    """Raised by a kernel or the dtype helper when a precision cannot run here: case skipped."""


class SkipCase(Exception):
    """A kernel may raise this to mark its case `skipped` with the exception's message as reason."""
