"""How long ``import rac`` takes, and how long until the first engine is ready, each in a fresh
interpreter (median and max of N runs). Writes ``benchmarks/results/import_time.json``.

    uv run python -m benchmarks.suites.import_time [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

PROBES = {
    "import rac": "import rac",
    "import rac; rac.RAC(store='memory://')": "import rac; rac.RAC(store='memory://')",
}
TEMPLATE = ("import time; t0 = time.perf_counter(); {stmt}; "
            "print(time.perf_counter() - t0)")


def measure(stmt: str, runs: int) -> dict[str, float]:
    """Seconds for ``stmt`` in ``runs`` fresh interpreters: median and max, in milliseconds."""
    times = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", TEMPLATE.format(stmt=stmt)],
                             capture_output=True, text=True, check=True)
        times.append(float(out.stdout.strip()) * 1000)
    return {"median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1),
            "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" /
                                             "import_time.json"))
    args = parser.parse_args()
    results = {label: measure(stmt, args.runs) for label, stmt in PROBES.items()}
    results["load_average"] = list(os.getloadavg())  # type: ignore[assignment]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
