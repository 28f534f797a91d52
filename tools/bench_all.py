#!/usr/bin/env python3
"""The seed's entry point: ``python tools/bench_all.py [--iters N ...]``.

A thin shim over ``kernbench run`` (same flags; ``--list`` prints the manifest). It works from a
checkout without installing kernbench, as long as its dependencies are importable.
"""

from __future__ import annotations

import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
if SRC.is_dir() and str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

from kernbench.cli.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["run", *sys.argv[1:]]))
