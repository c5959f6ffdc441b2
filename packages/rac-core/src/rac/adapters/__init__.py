"""The pieces every RAC adapter needs, built once (see ``docs/writing-an-adapter.md``).

An adapter translates one framework's extension points into the core's adapter API
(``engine.run``, ``run.execute``/``run.aexecute``, ``outcome.message``). What is left is the
same in every framework, and lives here:

- :func:`engine_for`: the engine from ``rac=`` or from :class:`rac.RAC` keywords (never both),
  taught the framework's plugin and control flow.
- :class:`RunRegistry` / :func:`registry_of`: runs keyed by an adapter-chosen key (a turn, a
  thread), bounded, never evicting a run with a call under way.
- :class:`RunScope` / :func:`open_or_join`, :func:`in_run`, :func:`in_async_run`: open a run
  around an entry point, or join the one already open.
- :func:`route`, :func:`aroute`: the ``invoke`` a call needs, sending the requested tool through
  the framework and an alternative to the framework's tool of that name or the engine's.
- :func:`framework_tool`, :class:`ToolCache`, :class:`ToolSetCache`: a framework tool as a
  :class:`rac.Tool` (for compensating calls), converted once, in bounded caches.
- :func:`params_from_schema`: parameter names from a JSON schema or a pydantic model.
- :func:`batch_key`, :func:`execute`, :func:`aexecute`: the calls one model turn started, as one
  parallel batch.
- :class:`CallRefused`, :func:`declare_control_flow`: exceptions that pass through untouched.
- :func:`offer_to_rac`: tools RAC may call that the model is not offered (compensators,
  lookups), in code or from MCP: what every adapter's ``tools=[...]`` does.
- :class:`Delegation`: a delegating call (an agent used as a tool, CodeAct's code execution)
  runs unlogged, the calls inside it join the run, and it answers what RAC told them.
- :mod:`rac.adapters.resumed`: a framework's saved state resumed after a crash continues the
  crashed run (its completed calls answered from the log); one resumed after its run was
  rolled back tells the model first.
"""

from rac.adapters.batches import Batch, aexecute, batch_key, execute, supports_batches
from rac.adapters.control import CallRefused, declare_control_flow, failure_text
from rac.adapters.delegation import Delegation
from rac.adapters.engines import engine_for
from rac.adapters.offered import offer_to_rac
from rac.adapters.params import params_from_schema
from rac.adapters.registry import RunRegistry, registry_of
from rac.adapters.routing import UnknownToolError, aroute, route
from rac.adapters.scope import RunScope, in_async_run, in_run, open_or_join
from rac.adapters.tools import ToolCache, ToolSetCache, framework_tool

__all__ = [
    "Batch", "CallRefused", "Delegation", "RunRegistry", "RunScope", "ToolCache", "ToolSetCache",
    "UnknownToolError", "aexecute", "aroute", "batch_key", "declare_control_flow", "engine_for",
    "execute", "failure_text", "framework_tool", "in_async_run", "in_run", "offer_to_rac",
    "open_or_join",
    "params_from_schema", "registry_of", "route", "supports_batches",
]
