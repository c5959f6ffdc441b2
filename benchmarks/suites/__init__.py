"""One module per measurement: the scenario suite (:mod:`.scenarios`, what ``python -m
benchmarks`` runs), per-call overhead and rollback time (:mod:`.overhead`), and the standalone
ones run as ``python -m benchmarks.suites.<name>``: ``core_path``, ``import_time``,
``langgraph_overhead``, ``crewai_overhead``, ``reliability``."""
