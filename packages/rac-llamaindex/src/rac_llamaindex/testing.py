"""Scripted models for testing LlamaIndex agents under RAC offline (no network, no keys).

A :class:`ScriptedModel` answers from a script: each step is a final answer (a string), the tool
calls of one model turn (a list of ``(tool, args)``; several are parallel calls), or a function
of what the model was given that returns one of those (to replan on what the tools said). It
records every input it received, so a test can check what the model saw after a rollback.

* :meth:`ScriptedModel.function_calling_llm` drives a ``FunctionAgent`` (a
  ``MockFunctionCallingLLM`` answering with tool-call blocks);
* :meth:`ScriptedModel.react_llm` drives a ``ReActAgent`` (a completion model writing
  ``Thought/Action/Action Input`` text; one call per turn).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
    ToolCallBlock,
)
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.mock import MockFunctionCallingLLM
from pydantic import PrivateAttr

ToolCalls = list[tuple[str, dict[str, Any]]]
#: One model turn of a script.
Step = str | ToolCalls | Callable[["ModelInput"], "Step"]


class ScriptExhausted(AssertionError):
    """The agent asked the model for more turns than the script has."""


class ModelInput:
    """What the model was given in one turn: ``(role, text)`` per message (a completion model
    gets one ``("prompt", text)``)."""

    def __init__(self, messages: list[tuple[str, str]]) -> None:
        self.messages = messages

    @property
    def text(self) -> str:
        """Every message's text, one per line."""
        return "\n".join(text for _, text in self.messages)

    def tool_results(self) -> list[str]:
        """The tool results (tool messages) in this input, in order."""
        return [text for role, text in self.messages if role == MessageRole.TOOL.value]

    def __contains__(self, fragment: str) -> bool:
        return fragment in self.text

    def __repr__(self) -> str:
        return f"ModelInput({self.messages!r})"


class ScriptedModel:
    """A model answering from a script (see the module docs); ``inputs`` holds what it saw."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self.inputs: list[ModelInput] = []

    def next_step(self, given: ModelInput) -> str | ToolCalls:
        """Record ``given`` and return the script's next turn."""
        turn = len(self.inputs)
        self.inputs.append(given)
        if turn >= len(self.steps):
            raise ScriptExhausted(f"the script has {len(self.steps)} turns; the agent asked for "
                                  f"turn {turn + 1} after seeing: {given.text[-300:]!r}")
        step = self.steps[turn]
        while callable(step):
            step = step(given)
        return step

    # -- function-calling models ---------------------------------------------------------------
    def _chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        given = ModelInput([(m.role.value, m.content or "") for m in messages])
        step = self.next_step(given)
        if isinstance(step, str):
            return ChatMessage(role=MessageRole.ASSISTANT, content=step)
        turn = len(self.inputs)
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[
            ToolCallBlock(tool_call_id=f"call-{turn}-{i}", tool_name=tool, tool_kwargs=args)
            for i, (tool, args) in enumerate(step)])

    def function_calling_llm(self) -> MockFunctionCallingLLM:
        """A function-calling model (for ``FunctionAgent`` and ``AgentWorkflow``) that plays
        this script."""
        return MockFunctionCallingLLM(response_generator=self._chat)

    # -- ReAct (completion) models -------------------------------------------------------------
    def _complete(self, prompt: str) -> str:
        step = self.next_step(ModelInput([("prompt", prompt)]))
        if isinstance(step, str):
            return f"Thought: I can answer without using any more tools.\nAnswer: {step}"
        if len(step) != 1:
            raise ValueError(f"a ReAct turn makes exactly one tool call, the script has {step!r}")
        ((tool, args),) = step
        return (f"Thought: I need to use a tool to help me answer the question.\n"
                f"Action: {tool}\nAction Input: {json.dumps(args)}")

    def react_llm(self) -> CustomLLM:
        """A completion model (for ``ReActAgent``) that plays this script."""
        return _ScriptedCompletionLLM.of(self)


class _ScriptedCompletionLLM(CustomLLM):
    """A completion model writing the ReAct format from a :class:`ScriptedModel`."""

    _script: ScriptedModel = PrivateAttr()

    @classmethod
    def of(cls, script: ScriptedModel) -> _ScriptedCompletionLLM:
        llm = cls()
        llm._script = script
        return llm

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(is_chat_model=False, model_name="rac-scripted-react")

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._script._complete(prompt))

    def stream_complete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponseGen:
        text = self._script._complete(prompt)

        def gen() -> CompletionResponseGen:
            yield CompletionResponse(text=text, delta=text)

        return gen()
