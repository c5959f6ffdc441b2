"""What every benchmark suite stands on: the runner, the fault layer, the scripted policies, the
world's ledger and the invariants, the classification of runs, the report and its plots, small
statistics and the virtual clock."""
