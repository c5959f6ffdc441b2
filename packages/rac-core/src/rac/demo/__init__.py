"""The offline trip-booking demo behind ``rac demo``: a scripted agent books a flight, a hotel and
a car in a world with real state; when a booking fails for good, RAC undoes the others."""

from rac.demo.trip import (
    DEMO_STEPS,
    DemoResult,
    build_engine,
    recover_demo,
    run_demo,
    world_path_for,
)

__all__ = ["DEMO_STEPS", "DemoResult", "build_engine", "recover_demo", "run_demo",
           "world_path_for"]
