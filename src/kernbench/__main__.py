"""``python -m kernbench``: the same command line as ``kernbench``."""

from kernbench.cli.main import main

raise SystemExit(main())
