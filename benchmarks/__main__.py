"""``python -m benchmarks [--quick | --full]``: see :mod:`benchmarks.cli`."""

from benchmarks.cli import main

raise SystemExit(main())
