"""RAC's offline benchmark: seeded worlds with their own ledgers, a fault layer, scripted policies,
the approaches compared (no recovery, prompted recovery, saga planning, RAC, the reference
implementation), invariants checked against the world, and the report that docs/benchmarks.md
is generated from.

Layout: ``harness/`` (runner, fault layer, policies, ledger, invariants, report, stats, clock),
``worlds/``, ``approaches/``, ``suites/`` (one module per measurement). Run it with
``uv run --group bench python -m benchmarks --quick``."""
