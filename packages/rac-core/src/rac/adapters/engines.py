"""The engine an adapter object uses: the caller's, or one built from :class:`rac.RAC` keywords,
taught the framework's plugin and control flow."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rac.adapters.offered import offer_to_rac
from rac.engine import RAC
from rac.errors import ConfigurationError


def engine_for(engine: RAC | None, config: Mapping[str, Any], *, plugin: object | None = None,
               plugin_name: str | None = None,
               passthrough: Iterable[type[BaseException]] = (),
               agent_id: str | None = None,
               convert_tool: Callable[[Any], Any] | None = None) -> RAC:
    """``engine``, or a new :class:`rac.RAC` made from ``config`` (its keywords), ready for a
    framework.

    Giving both an engine and keywords is refused: the keywords would silently be ignored, and
    an engine's settings apply to every agent that shares it. ``tools`` in ``config`` (framework
    tools the model is not offered, such as compensators) are allowed next to an engine and
    registered with it, each passed through ``convert_tool`` first if given (else the engine
    adapts it, through ``plugin``'s ``rac_adapt_tool`` if it has one); their declarations are
    checked as they are added, since the agent's own tools are not known yet.

    ``plugin`` is registered once per engine under ``plugin_name`` (a second adapter object on
    the same engine finds it there); ``passthrough`` lists the framework's control-flow
    exceptions (see :func:`rac.adapters.declare_control_flow`). ``agent_id`` is the default
    agent id of a new engine.

    Raises:
        rac.ConfigurationError: both an engine and keywords were given, ``engine`` is not a
            :class:`rac.RAC`, or a keyword is not one of :class:`rac.RAC`'s.
    """
    config = dict(config)
    tools = config.pop("tools", None)
    if engine is not None:
        if not isinstance(engine, RAC):
            raise ConfigurationError(f"rac= must be a rac.RAC engine, got {type(engine).__name__}")
        if config:
            raise ConfigurationError(
                f"pass either rac=<engine> or rac.RAC keywords, not both (got {sorted(config)}); "
                "the engine's own settings apply to every agent that shares it")
    else:
        if agent_id is not None:
            config.setdefault("agent_id", agent_id)
        if plugin is not None:  # first, and once: a user-given one of its type is dropped
            config["plugins"] = [plugin, *(p for p in config.get("plugins", ())
                                           if type(p) is not type(plugin))]
        try:
            engine = RAC(**config)
        except TypeError as e:
            raise ConfigurationError(f"not a rac.RAC keyword: {e}") from e
    if plugin is not None and not _has_plugin(engine, plugin, plugin_name):
        engine.register_plugin(plugin, name=plugin_name)
    passthrough = tuple(passthrough)
    if passthrough:
        engine.add_passthrough(*passthrough)
    if tools:
        offer_to_rac(engine, tools, convert_tool)
    return engine


def _has_plugin(engine: RAC, plugin: object, name: str | None) -> bool:
    manager = engine.plugin_manager
    if name is not None and manager.get_plugin(name) is not None:
        return True
    return any(p is plugin or type(p) is type(plugin) for p in manager.get_plugins())
