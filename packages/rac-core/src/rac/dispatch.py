"""Hook dispatch, in one place: how the engine asks its plugins.

Every hook of :mod:`rac.hookspecs` is called through :class:`Hooks`, which reads the hooks'
names and whether each is first-result from the specs the plugin manager holds (the ones of
:mod:`rac.hookspecs`, :data:`SPECS`, and any an adapter adds): a hook added to the specs is
dispatched with nothing else to change, and asking for a name that is not a hookspec, or for
a notification as if it were first-result, is an error. Each implementation is called
directly with the subset of the arguments it declares (pluggy's own contract), in pluggy's
order (last registered first, ``tryfirst``/``trylast`` honoured). When a hook has one
implementation, as most have (the default plugin), that is one direct call: the default
plugins' "fast form" is simply their own method, never a different function.

A plugin that raises never breaks a call or a rollback: the failure is emitted as one
``rac.plugin_failed`` event naming the plugin and the hook, and the implementation counts as
having no answer (the next one, usually the default, answers). Hooks with a wrapper
implementation (``wrapper=True``/``hookwrapper=True``) are called through pluggy itself, under
the same guard.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NoReturn

import pluggy

from rac import hookspecs
from rac.events import emit


def hook_specs() -> dict[str, bool]:
    """Every hook :mod:`rac.hookspecs` specifies, by name, with whether it is first-result
    (True) or a notification (False), in the module's order."""
    attr = f"{hookspecs.PROJECT}_spec"
    specs: dict[str, bool] = {}
    for name, fn in vars(hookspecs).items():
        opts = getattr(fn, attr, None) if inspect.isfunction(fn) else None
        if opts is not None:
            specs[name] = bool(opts.get("firstresult"))
    return specs


#: name -> first-result, read from :mod:`rac.hookspecs`.
SPECS = hook_specs()

_Impl = tuple[str, Callable[..., Any], tuple[str, ...]]


class Hooks:
    """The plugins of one engine, ready to be asked. Refreshed whenever a plugin comes or goes
    (see :class:`rac.engine.RAC`); read-only otherwise, so safe to share between threads."""

    def __init__(self, manager: pluggy.PluginManager) -> None:
        self._manager = manager
        self._impls: dict[str, list[_Impl] | None] = {}
        #: name -> first-result, of every hook specified in the manager
        self.specs: dict[str, bool] = {}
        #: counts the refreshes: what was decided from the hooks at one generation (a call
        #: plan, see :mod:`rac.run.plan`) holds until the next
        self.generation = 0
        self.refresh()

    def refresh(self) -> None:
        """Read the specs and the implementations of every hook again (after a plugin or a
        module of specs was added or removed)."""
        specs = dict(SPECS)
        for name, caller in vars(self._manager.hook).items():
            spec = getattr(caller, "spec", None)
            if spec is not None:
                specs[name] = bool(spec.opts.get("firstresult"))
        impls: dict[str, list[_Impl] | None] = {}
        for name in specs:
            caller = getattr(self._manager.hook, name, None)
            if caller is None:
                impls[name] = []
                continue
            found = caller.get_hookimpls()
            if any(i.hookwrapper or i.wrapper for i in found):
                impls[name] = None  # pluggy calls it: wrappers need its machinery
                continue
            impls[name] = [(i.plugin_name, i.function, tuple(i.argnames))
                           for i in reversed(found)]
        self._impls = impls
        self.specs = specs
        self.generation += 1
        #: the hooks some plugin implements (or wraps): a hook not here has no answer
        self.implemented = frozenset(name for name, found in impls.items() if found != [])
        #: True while the call path's hooks are answered by the default plugins alone (no
        #: normalizer, the registry resolves compensations, structured result errors, no
        #: record listener, no fault injector): :mod:`rac.run.fast` may then decide what they
        #: would.
        self.defaults_only = (
            not impls.get("rac_normalize_result")
            and impls.get("rac_record_written") == []
            and impls.get("rac_inject_fault") == []
            and impls.get("rac_attempt_started") == []
            and impls.get("rac_attempt_finished") == []
            and _only(impls.get("rac_resolve_compensation"), "rac.default.compensations")
            and _only(impls.get("rac_detect_result_error"), "rac.default.result_errors"))
        #: True while the default plugin alone resolves compensations (from the registry, by
        #: the tool's name): what it answers for a tool holds until the declarations change
        self.registry_compensations = _only(impls.get("rac_resolve_compensation"),
                                            "rac.default.compensations")
        #: The implementation that alone reads a result for the failure it describes, when
        #: one does and no plugin normalizes results (the default plugin's own method): a
        #: call asks it directly, under the same guard as :meth:`first`.
        detect = impls.get("rac_detect_result_error") or []
        sole = len(detect) == 1 and len(detect[0][2]) == 2 \
            and not impls.get("rac_normalize_result")
        self.sole_detect: Callable[..., Any] | None = detect[0][1] if sole else None
        #: the plugin of :attr:`sole_detect` (named when it fails)
        self.sole_detect_plugin = detect[0][0] if sole else ""
        #: True when a plugin listens to attempts or injects faults into them (an attempt
        #: then goes through those hooks; else it is the tool call alone)
        self.watches_attempts = not self.implemented.isdisjoint(
            ("rac_attempt_started", "rac_attempt_finished", "rac_inject_fault"))
        #: True when a plugin beyond the defaults answers an approval hook: such an answer
        #: may wait for a person, so the async entry points ask it on a worker thread, never
        #: on the event loop (see :attr:`rac.Run.offloads`).
        approve = impls.get("rac_approve_compensation")
        self.asks_people = (impls.get("rac_approve_action") != []
                            or not _only(approve, "rac.default.approve"))

    def listened(self, name: str) -> bool:
        """True if any plugin implements the notification hook ``name`` (RAC skips building
        the arguments of a notification nobody receives)."""
        if name not in self._impls:
            _unknown(name)
        impls = self._impls[name]
        return impls is None or bool(impls)

    def first(self, name: str, *, propagate: tuple[type[BaseException], ...] = (),
              **kwargs: Any) -> Any:
        """Ask a first-result hook: the first answer that is not None, or None. Exceptions of
        the ``propagate`` types are a plugin's deliberate answer and are raised."""
        try:
            impls = self._impls[name]
        except KeyError:
            _unknown(name)
        if not self.specs[name]:
            raise TypeError(f"{name} is a notification hook: call Hooks.notify, not first")
        if impls is None:
            return self._through_pluggy(name, kwargs, propagate)
        for plugin, function, argnames in impls:
            try:  # an implementation that declares every argument takes them as they are
                answer = function(**kwargs) if len(argnames) == len(kwargs) else \
                    function(**{a: kwargs[a] for a in argnames})
            except propagate:
                raise
            except Exception as e:  # noqa: BLE001 - a plugin's failure is "no answer"
                plugin_failed(plugin, name, e)
                continue
            if answer is not None:
                return answer
        return None

    def notify(self, name: str, **kwargs: Any) -> None:
        """Tell every implementation of a notification hook; failures are emitted, not raised."""
        try:
            impls = self._impls[name]
        except KeyError:
            _unknown(name)
        if self.specs[name]:
            raise TypeError(f"{name} is a first-result hook: call Hooks.first, not notify")
        if impls is None:
            self._through_pluggy(name, kwargs)
            return
        for plugin, function, argnames in impls:
            try:
                if len(argnames) == len(kwargs):
                    function(**kwargs)
                else:
                    function(**{a: kwargs[a] for a in argnames})
            except Exception as e:  # noqa: BLE001 - a listener's failure never breaks a run
                plugin_failed(plugin, name, e)

    def _through_pluggy(self, name: str, kwargs: dict[str, Any],
                        propagate: tuple[type[BaseException], ...] = ()) -> Any:
        try:
            return getattr(self._manager.hook, name)(**kwargs)
        except propagate:
            raise
        except Exception as e:  # noqa: BLE001 - see the module docstring
            plugin_failed("(a hook wrapper chain)", name, e)
            return None


def _unknown(name: str) -> NoReturn:
    raise KeyError(f"{name!r} is not a hook of rac.hookspecs (known: {', '.join(SPECS)})")


def _only(impls: list[_Impl] | None, plugin: str) -> bool:
    return impls is not None and len(impls) == 1 and impls[0][0] == plugin


def plugin_failed(plugin: str, hook: str, error: Exception) -> None:
    """Say that ``plugin`` failed in ``hook`` (one ``rac.plugin_failed`` event): its answer
    counts as none."""
    emit("rac.plugin_failed", level="warning", plugin=plugin, hook=hook, status="no_answer",
         error=f"{type(error).__name__}: {error}"[:500])


__all__ = ["SPECS", "Hooks", "hook_specs", "plugin_failed"]
