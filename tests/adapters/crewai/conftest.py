"""CrewAI tests run offline: telemetry and tracing off, and a throwaway HOME (CrewAI writes
under ~/.local/share and ~/.config). Set before anything imports crewai."""

import os
import tempfile

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["OTEL_SDK_DISABLED"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
os.environ["HOME"] = tempfile.mkdtemp(prefix="rac-crewai-home-")


def pytest_configure(config):  # type: ignore[no-untyped-def]
    """CrewAI's (and crewai-tools' and mcpadapt's) own deprecation warnings are not ours to fix."""
    config.addinivalue_line("filterwarnings", r"ignore::DeprecationWarning:crewai(\..*)?")
    config.addinivalue_line("filterwarnings", r"ignore::DeprecationWarning:mcpadapt(\..*)?")
    config.addinivalue_line("filterwarnings", r"ignore::DeprecationWarning:crewai_tools(\..*)?")
    # mcpadapt opens HTTP servers with mcp's older streamablehttp_client
    config.addinivalue_line("filterwarnings",
                            r"ignore:Use `streamable_http_client` instead:DeprecationWarning")
