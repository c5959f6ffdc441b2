"""rac-crewai passes the adapter conformance suite (enable_rac on a one-agent crew)."""

from __future__ import annotations

import pytest

from rac.testing import AdapterConformance
from rac_crewai.testing import ConformanceHarness


class TestConformance(AdapterConformance):
    @pytest.fixture
    def adapter(self) -> ConformanceHarness:
        return ConformanceHarness()
