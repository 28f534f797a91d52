"""Command line entry point (``kernbench``, ``python -m kernbench``): parse, dispatch, and map
what went wrong to an exit code. The work happens in :mod:`kernbench.api`; the flags are the
table of :mod:`kernbench.config.options`.

Exit codes: 0 everything ran, 1 a case failed or timed out, 2 usage or configuration error
(and a file that cannot be read or written), 130 interrupted.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from kernbench.cli.commands import dispatch
from kernbench.cli.console import configure, error
from kernbench.cli.parser import parse_args
from kernbench.errors import EXIT_USAGE, KernbenchError


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv` (default: sys.argv[1:]); its exit code."""
    from kernbench.execution.interrupts import signals_handled

    args: argparse.Namespace | None = None
    try:
        with signals_handled():  # SIGTERM ends any command as Ctrl-C does: cleanly
            configure(False, False)
            args = parse_args(argv)
            configure(args.quiet, args.verbose)
            return dispatch(args)
    except KernbenchError as exc:
        error(f"kernbench: error: {exc.message}")
        return exc.exit_code
    except BrokenPipeError:  # `kernbench list --json | head`: the reader has what it wanted
        return _reader_gone()
    except OSError as exc:  # a report or history file that cannot be written (full disk,
        # a folder removed or replaced mid-run): what and where, not two chained tracebacks
        if args is not None and getattr(args, "verbose", False):
            import traceback

            traceback.print_exc()
        error(f"kernbench: error: {_os_error(exc)}")
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        from kernbench.execution.interrupts import exit_code_for_interrupt

        what = exc.args[0] if exc.args else "SIGINT"
        error(f"kernbench: interrupted ({what}){_how_to_continue(args)}")
        return exit_code_for_interrupt(exc)


def _os_error(exc: OSError) -> str:
    """`cannot write out/kernels: [Errno 17] File exists` where the error names its file."""
    where = f" on {exc.filename}" if exc.filename is not None else ""
    what = exc.strerror or str(exc) or type(exc).__name__
    number = f"[Errno {exc.errno}] " if exc.errno is not None else ""
    return f"{type(exc).__name__}{where}: {number}{what} (run again with -v for the traceback)"


EXIT_BROKEN_PIPE = 128 + 13
"""What a shell reports for a command killed by SIGPIPE, as `git log | head` is."""


def _reader_gone() -> int:
    """Stdout's reader closed the pipe: no traceback, and no second error when Python
    flushes stdout at exit (it is pointed at /dev/null, as Python's documentation advises)."""
    import os
    import sys

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def _how_to_continue(args: argparse.Namespace | None) -> str:
    """What an interrupted command kept and how to go on from it ("" for nothing)."""
    if args is None or args.command != "run":
        return ""
    if args.ab:
        return (f"; the rounds that finished are saved in {args.output_dir} and "
                f"{args.output_dir}/baseline (complete: false, not compared); an --ab run "
                "cannot be resumed: run it again")
    if getattr(args, "shards", None):
        return _how_to_continue_shards(args.output_dir, args.shards)
    out = args.output_dir
    if not (out / "summary.json").is_file():
        return "; no case had started, so nothing was saved: run it again"
    from kernbench.execution.held import FOLDER_NAME, held_count

    if any((out / "kernels").glob("*.json")):
        return f"; finished cases are saved: continue with --resume {out}"
    if held_count(out / FOLDER_NAME):
        return (f"; no case had finished, but the worker processes that did are saved: "
                f"continue with --resume {out}")
    return (f"; no case had finished, so only the run's settings were saved: continue with "
            f"--resume {out} (it runs every case), or run it again")


def _how_to_continue_shards(out: Path, total: int) -> str:
    """A sharded run's folders: resume the shards that started, run those that did not."""
    from kernbench.api.scale import shard_dir

    started = [k for k in range(1, total + 1)
               if (shard_dir(out, k, total) / "summary.json").is_file()]
    never = [k for k in range(1, total + 1) if k not in started]
    resumes = "; ".join(f"kernbench run --resume {shard_dir(out, k, total)}" for k in started)
    text = (f"; finished cases are saved in each shard's folder: continue the started shards "
            f"({resumes})" if started else "; no shard had started")
    runs = "; ".join(f"the same flags with --shard {k}/{total} --output-dir "
                     f"{shard_dir(out, k, total)}" for k in never)
    if never:
        text += f"; run the shards that never wrote a report ({runs})"
    folders = " ".join(str(shard_dir(out, k, total)) for k in range(1, total + 1))
    return f"{text}; then kernbench merge {out} {folders}"
