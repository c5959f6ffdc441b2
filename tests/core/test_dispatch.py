"""Issue 28: the dispatcher reads the hooks from their specs. Every hook of rac.hookspecs is
dispatched, as first-result or as notification as its spec says; a hook added to the specs
alone reaches its plugins."""

from __future__ import annotations

import inspect
from typing import Any

import pluggy
import pytest

import rac
from rac import hookspecs
from rac.dispatch import SPECS
from rac.testing import TravelWorld

SPEC_NAMES = sorted(n for n, f in inspect.getmembers(hookspecs, inspect.isfunction)
                    if n.startswith("rac_"))


def test_the_dispatcher_knows_every_hookspec_and_its_kind() -> None:
    assert sorted(SPECS) == SPEC_NAMES
    for name in SPEC_NAMES:
        marked = getattr(getattr(hookspecs, name), f"{hookspecs.PROJECT}_spec")
        assert SPECS[name] is bool(marked["firstresult"]), name


def test_a_hook_added_to_the_specs_alone_is_dispatched(make_engine: Any) -> None:
    """A new notification and a new first-result hook, specified in a module of specs and
    nowhere else, reach the plugins that implement them."""
    import types

    specs = types.ModuleType("more_specs")
    marker = pluggy.HookspecMarker(hookspecs.PROJECT)

    def rac_something_happened(run_id: str) -> None:
        """A new notification."""

    def rac_pick_one(options: list[str]) -> str | None:
        """A new first-result hook."""

    specs.rac_something_happened = marker(rac_something_happened)  # type: ignore[attr-defined]
    specs.rac_pick_one = marker(firstresult=True)(rac_pick_one)  # type: ignore[attr-defined]
    heard: list[str] = []

    class Listener:
        @rac.hookimpl
        def rac_something_happened(self, run_id: str) -> None:
            heard.append(run_id)

        @rac.hookimpl
        def rac_pick_one(self, options: list[str]) -> str:
            return options[-1]

    engine = make_engine(plugins=[Listener()])
    engine.plugin_manager.add_hookspecs(specs)  # after the plugin: pluggy checks it then
    hooks = engine.hooks
    assert hooks.listened("rac_something_happened")
    hooks.notify("rac_something_happened", run_id="r1")
    assert heard == ["r1"]
    assert hooks.first("rac_pick_one", options=["a", "b"]) == "b"
    assert hooks.specs["rac_pick_one"] is True and hooks.specs["rac_something_happened"] is False


def test_asking_for_what_no_spec_names_is_an_error(make_engine: Any) -> None:
    hooks = make_engine().hooks
    with pytest.raises(KeyError, match="rac_no_such_hook"):
        hooks.first("rac_no_such_hook")
    with pytest.raises(KeyError, match="rac_no_such_hook"):
        hooks.notify("rac_no_such_hook")
    with pytest.raises(TypeError, match="notification"):
        hooks.first("rac_record_written", record=None, previous=None)
    with pytest.raises(TypeError, match="first-result"):
        hooks.notify("rac_normalize_result", tool="t", result=None)


class EveryHook:
    """Implements every hookspec, answering nothing, and remembers which were called."""

    def __init__(self) -> None:
        self.called: set[str] = set()


def _recording(name: str) -> Any:
    params = list(inspect.signature(getattr(hookspecs, name)).parameters)

    def impl(self: EveryHook, **kwargs: Any) -> None:
        self.called.add(name)

    # pluggy reads the implementation's argument names from its signature
    impl.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY) for p in params])
    impl.__name__ = name
    return rac.hookimpl(impl)


for _name in SPEC_NAMES:
    setattr(EveryHook, _name, _recording(_name))


def test_every_hookspec_is_dispatched_by_real_runs(make_engine: Any,
                                                    world: TravelWorld) -> None:
    """A plugin implementing every hookspec hears each one in the course of ordinary runs: a
    call, a failure rolled back, an irreversible call waiting for approval, a tool adapted."""
    plugin = EveryHook()
    engine = make_engine(plugins=[plugin], irreversible={"send_receipt": "approve"})

    def send_receipt(to: str) -> str:
        return f"sent to {to}"

    def echo(text: str) -> str:
        return text

    engine.adapt_tool(echo)  # plugins are asked to adapt a tool first
    world.fail("book_hotel", "permanent", message="full")
    with engine.run() as run:
        run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
        with pytest.raises(rac.CallRefused, match="waits for approval"):
            run.call(send_receipt, to="ann")  # nobody approved it: not run
        with pytest.raises(rac.ToolCallFailed):
            run.call("book_hotel", guest="ann", city="Paris", nights=2)
    missing = set(SPEC_NAMES) - plugin.called
    assert not missing, f"never dispatched: {sorted(missing)}"
