"""The scripted models and ``rac.testing.prove`` import without pytest (only the conformance
suites and the pytest plugin need it, from the core's ``testing`` extra)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

BLOCK = "import sys; sys.modules['pytest'] = None; sys.modules['_pytest'] = None\n"


@pytest.mark.parametrize("module", ["rac.testing", "rac.testing.proof", "rac_langgraph.testing",
                                    "rac_crewai.testing", "rac_llamaindex.testing",
                                    "rac_semantic_kernel.testing"])
def test_imports_without_pytest(module: str, tmp_path: object) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "CREWAI_DISABLE_TELEMETRY": "true",
           "OTEL_SDK_DISABLED": "true", "CREWAI_TRACING_ENABLED": "false"}
    out = subprocess.run([sys.executable, "-c", f"{BLOCK}import {module}"], env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]


def test_the_conformance_suite_says_it_needs_pytest() -> None:
    out = subprocess.run([sys.executable, "-c", f"{BLOCK}import rac.testing\n"
                          "rac.testing.AdapterConformance"], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode != 0 and "needs pytest: install the core's 'testing' extra" in out.stderr
