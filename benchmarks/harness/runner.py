"""Runs every approach on every (scenario, fault class) cell over N seeds, in worker processes,
and turns each episode into one row of facts."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from benchmarks.approaches.base import Episode, RunResult, make_setup
from benchmarks.harness import catalog
from benchmarks.harness.classify import classify
from benchmarks.harness.invariants import check

Row = dict[str, Any]
#: a world that diffs its database compares all of it (not only the records calls named) for
#: every n-th seed (seeds 9, 19, ...)
FULL_DIFF_EVERY = 10


def quiet() -> None:
    """Silence RAC's structlog events and the reference's logging in this process."""
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL),
                        cache_logger_on_first_use=True)
    logging.getLogger("react_agent_compensation").setLevel(logging.CRITICAL)
    logging.getLogger("agent_saga").setLevel(logging.CRITICAL)
    from loguru import logger

    logger.disable("tau2")


def run_episode(approach: str, scenario: str, fault_class: str, seed: int,
                variant: str = "plain") -> Row:
    """One seeded run, checked against the world and classified."""
    fc = catalog.fault_classes()[fault_class]
    setup = make_setup(catalog.scenarios()[scenario], fc, seed, variant)
    if hasattr(setup.world, "full_diff"):
        setup.world.full_diff = seed % FULL_DIFF_EVERY == FULL_DIFF_EVERY - 1
    try:
        result = catalog.approaches()[approach].run(setup)
    except Exception as e:  # noqa: BLE001 - a crash of an approach is a finding, not a bug here
        result = RunResult("crashed", 0, report=f"{type(e).__name__}: {e}",
                           crashed=type(e).__name__)
    ep = Episode(approach, setup, result)
    verdict = check(ep)
    klass = classify(ep, verdict)
    first = setup.layer.stats.first_fault_at
    row = {
        "approach": approach, "scenario": scenario, "world": setup.scenario.world,
        "cls": fault_class, "variant": variant, "expected": fc.expected, "seed": seed,
        "status": result.status, "goal_met": verdict.goal_met, "residual": verdict.residual,
        "violations": {k: (v[0] if v else None) for k, v in verdict.violations.items()},
        "outcome": klass.outcome, "silent_residual": klass.silent_residual,
        "false_clean": klass.false_clean, "totals_off": klass.totals_off,
        "double_undo": klass.double_undo, "compensations": klass.compensations,
        "needed_compensation": klass.needed_compensation, "live": klass.live[:5],
        "unundoable": klass.unundoable, "disagreements": klass.disagreements,
        "claims_clean": result.claims_clean, "in_doubt_faults": setup.layer.stats.in_doubt,
        "tool_calls": ep.tool_calls, "policy_steps": result.policy_steps,
        "planning_calls": result.planning_calls,
        "recovery_time": (setup.clock.now() - first) if first is not None else None,
        "crashed": result.crashed,
    }
    reset = getattr(setup.world, "reset", None)
    if reset is not None:  # a world shared by the runs of a process (tau2's database)
        reset()
    return row


def run_cell(task: tuple[str, str, str, str, list[int]]) -> list[Row]:
    """Every seed of one (approach, scenario, fault class, variant) cell."""
    approach, scenario, fault_class, variant, seeds = task
    return [run_episode(approach, scenario, fault_class, s, variant) for s in seeds]


def _init_worker() -> None:
    quiet()


def tasks(seeds: int,
          approaches: list[str] | None = None) -> list[tuple[str, str, str, str, list[int]]]:
    """All cells times all approaches; slow approaches first so the pool stays busy."""
    names = approaches or list(catalog.approaches())
    seed_list = list(range(seeds))
    order = sorted(names, key=lambda n: 0 if "sqlite" in n else 1)
    return [(a, sk, fc, v, seed_list) for a in order for sk, fc, v in catalog.cells()
            if catalog.runs_in(a, sk)]


def run_all(seeds: int, *, workers: int | None = None, approaches: list[str] | None = None,
            progress: Callable[[int], Any] | None = None) -> Iterator[list[Row]]:
    """Yield the rows of each finished cell; ``progress(total)`` gets a progress bar factory."""
    todo = tasks(seeds, approaches)
    workers = workers or min(4, os.cpu_count() or 1)
    if workers <= 1:
        quiet()
        for t in todo:
            yield run_cell(t)
        return
    with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker) as pool:
        yield from pool.map(run_cell, todo, chunksize=1)
