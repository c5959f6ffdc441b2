"""rac-langgraph passes the adapter conformance suite (RACMiddleware on create_agent)."""

from __future__ import annotations

import pytest

from rac.testing import AdapterConformance
from rac_langgraph.testing import ConformanceHarness


class TestConformance(AdapterConformance):
    @pytest.fixture
    def adapter(self) -> ConformanceHarness:
        return ConformanceHarness()
