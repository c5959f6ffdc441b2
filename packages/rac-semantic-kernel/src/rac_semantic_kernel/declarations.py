"""The engine's declarations, in the names a kernel's functions are logged under.

A user declares ``compensations={"travel.book_flight": "travel.cancel_flight"}`` or, with bare
names, ``{"book_flight": "cancel_flight"}``; RAC logs the call as ``travel-book_flight``. For
each declaration whose subject is a function of the kernel, the same declaration is added under
the logged names (the original stays, for other kernels and tools). A declaration written in
the logged form itself wins over one derived from another spelling. A compensator or
alternative must be a function of the kernel or a tool the engine knows: anything else is a
:class:`rac.ConfigurationError` now, not at rollback time.
"""

from __future__ import annotations

import rac
from rac_semantic_kernel.functions import KernelFunctions

_DERIVED = "rac_semantic_kernel.derived"


def _derived(engine: rac.RAC) -> set[tuple[str, str]]:
    """(kind, logged name) of the declarations this module added to ``engine``."""
    found = engine.extensions.get(_DERIVED)
    if not isinstance(found, set):
        found = set()
        engine.extensions[_DERIVED] = found
    return found


def _target(engine: rac.RAC, functions: KernelFunctions, name: str, field: str) -> str:
    """The logged name of a compensator or alternative ``name``."""
    try:
        full = functions.resolve(name, strict=True)
    except rac.ConfigurationError as e:
        raise rac.ConfigurationError(f"{field}: {e}") from None
    if full is not None:
        return full
    if name in engine.tools:
        return name
    raise rac.ConfigurationError(
        f"{field}: {name!r} is neither a function of this kernel ({sorted(functions)}) nor a "
        f"tool the engine knows ({sorted(engine.tools)}); add the plugin that has it to the "
        f"kernel, or register it with rac.RAC(tools=[...])")


def adopt_declarations(engine: rac.RAC, functions: KernelFunctions,
                       broken: dict[str, str] | None = None) -> None:
    """Add the declarations that concern ``functions`` under their logged names, checking that
    every compensator and alternative they name can be called.

    Raises :class:`rac.ConfigurationError` for one that cannot; with ``broken``, the error is
    kept there instead, by the logged name of the function it concerns, and the other
    declarations are adopted (a plugin added to a kernel mid-run: its calls are refused until
    the compensator is there, the kernel's other calls go on)."""
    registry = engine.registry
    derived = _derived(engine)

    def target(subject: str, name: str, field: str) -> str | None:
        try:
            return _target(engine, functions, name, field)
        except rac.ConfigurationError as e:
            if broken is None:
                raise
            full = functions.resolve(subject)
            broken[full or subject] = str(e)
            return None

    for subject, comp in list(registry.pairs.items()):
        full = functions.resolve(subject)
        if full is None:
            continue
        tool = target(subject, comp.tool, f"compensations[{subject!r}].tool")
        if tool is None:
            continue
        if full == subject:
            if tool != comp.tool:
                registry.add(full, comp.model_copy(update={"tool": tool}))
            continue
        if full in registry.pairs and ("pair", full) not in derived:
            continue  # declared under the logged name itself
        wanted = comp.model_copy(update={"tool": tool})
        if registry.pairs.get(full) != wanted:
            registry.add(full, wanted)
            derived.add(("pair", full))
    for subject, alts in list(registry.alternatives.items()):
        full = functions.resolve(subject)
        if full is None:
            continue
        found = [target(subject, a, f"alternatives[{subject!r}]") for a in alts]
        if None in found:
            continue
        names = [n for n in found if n is not None]
        if full != subject and full in registry.alternatives \
                and ("alternatives", full) not in derived:
            continue
        if registry.alternatives.get(full) != names:
            registry.add_alternatives(full, names)
            if full != subject:
                derived.add(("alternatives", full))
    for name in list(registry.read_only):
        full = functions.resolve(name)
        if full is not None and full not in registry.read_only and full not in registry.pairs:
            registry.add_read_only(full)
