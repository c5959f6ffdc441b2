"""RAC's built-in behaviour, written as default plugins on the hookspecs.

Each is registered under a name (``rac.default.<piece>``) and runs last, so a third-party plugin
replaces a piece by implementing the same hook, or removes it with
``engine.plugin_manager.unregister(name=...)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rac.classify import Classification, default_classify, default_detect_result_error
from rac.hookspecs import hookimpl
from rac.mapping import map_arguments
from rac.report import RecoveryReport, render_report

if TYPE_CHECKING:
    from rac.engine import RAC
    from rac.models import Record
    from rac.registry import Compensation
    from rac.tools import Tool


class RegistryCompensations:
    """Resolves a compensator from the engine's registry (code declarations, MCP metadata)."""

    @hookimpl(trylast=True)
    def rac_resolve_compensation(self, engine: RAC, record: Record) -> Compensation | None:
        return engine.registry.pairs.get(record.tool)


class DefaultArgumentMapper:
    """Maps compensation arguments: callable, declared paths, else parameter names."""

    @hookimpl(trylast=True)
    def rac_map_compensation_args(self, engine: RAC, record: Record,
                                  compensation: Compensation, tool: Tool | None,
                                  args: dict[str, Any], result: Any, idempotency_key: str,
                                  before: Any) -> dict[str, Any]:
        return map_arguments(compensation, tool=record.tool, args=args, result=result,
                             params=tool.params if tool else None,
                             required=tool.required if tool else [],
                             idempotency_key=idempotency_key, before=before,
                             key_param=engine.key_param)


class DefaultErrorClassifier:
    """Classifies by exception type, status code and Retry-After (see :mod:`rac.classify`)."""

    @hookimpl(trylast=True)
    def rac_classify_error(self, tool: str, error: BaseException) -> Classification:
        return default_classify(error)


class StructuredResultErrors:
    """Flags results whose ``error``/``status``/``success``/``ok`` fields say they failed."""

    @hookimpl(trylast=True)
    def rac_detect_result_error(self, tool: str, result: Any) -> BaseException | None:
        return default_detect_result_error(result)


class AutoApprove:
    """Approves every compensation (replace it to hold compensations for a person)."""

    @hookimpl(trylast=True)
    def rac_approve_compensation(self) -> bool:
        return True


class ShortReportRenderer:
    """Renders the recovery report in a few lines (:func:`rac.report.render_report`)."""

    @hookimpl(trylast=True)
    def rac_render_report(self, report: RecoveryReport) -> str:
        return render_report(report)


#: The default plugins, by the name each is registered under.
DEFAULT_PLUGINS: dict[str, type] = {
    "rac.default.compensations": RegistryCompensations,
    "rac.default.mapping": DefaultArgumentMapper,
    "rac.default.classify": DefaultErrorClassifier,
    "rac.default.result_errors": StructuredResultErrors,
    "rac.default.approve": AutoApprove,
    "rac.default.render": ShortReportRenderer,
}
