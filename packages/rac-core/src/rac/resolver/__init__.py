"""Opt-in: compensation pairs and argument mappings proposed by a chat model, never a guess.

For a side-effecting tool nobody declared a pair for, :class:`LLMResolver` asks a model which
of the tools on offer undoes it, and, when RAC cannot map a compensator's parameters by itself,
where each one comes from in the original call's arguments and result. Every answer is checked
against the tool list, the compensator's schema and the call's own values; anything else is
"no proposal", logged with the reason. Accepted answers are remembered in the log's store, keyed
by the tools and a hash of their schemas, so the model is asked once per pair and a recovery
needs no model. A policy says whether a new proposal is used at once, waits for an operator
(``rac pairs approve``), or is only recorded. See ``docs/llm-resolver.md``.

    engine = rac.RAC(tools=[...], plugins=[LLMResolver(chat_model, policy="approve")])
"""

from rac.resolver.book import MemoryPairBook, pair_book, pair_key, schema_hash
from rac.resolver.chat import Answer, ChatModel, PromptFn, ask, message_text, prompt_fn
from rac.resolver.plugin import LLMResolver, Policy, declared_pairs
from rac.resolver.scripted import ScriptedModel, Slow
from rac.resolver.validate import NoProposal

__all__ = [
    "Answer", "ChatModel", "LLMResolver", "MemoryPairBook", "NoProposal", "Policy", "PromptFn",
    "ScriptedModel", "Slow", "ask", "declared_pairs", "message_text", "pair_book", "pair_key",
    "prompt_fn", "schema_hash",
]
