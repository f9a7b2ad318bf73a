"""Models for the loop: a scripted replay that runs anywhere, a hosted model when a key is set."""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .agent_loop import LoopResult, ModelError, ModelReply
from .tool_dispatch import TOOL_FAILED, ToolCall

DEFAULT_MODEL = "gpt-5.1"
"""Hosted model used when a key is found."""

KEY_NAME = "OPENAI_API_KEY"
"""Name of the secret or environment variable holding the key."""


@dataclass(frozen=True)
class ScriptedTurn:
    """A recorded assistant turn; call identifiers are assigned when it is replayed."""

    text: str
    calls: tuple[tuple[str, Mapping[str, Any]], ...]


def scripted_turn(text: str = "", calls: Sequence[Mapping[str, Any]] = ()) -> ScriptedTurn:
    """Record a turn from its text and calls given as {"name": ..., "arguments": {...}}."""
    recorded = []
    for position, call in enumerate(calls, start=1):
        name, arguments = call.get("name"), call.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, Mapping):
            raise ValueError(
                f"call {position} of a scripted turn must look like "
                f'{{"name": str, "arguments": dict}}, got {call!r}'
            )
        recorded.append((name, copy.deepcopy(dict(arguments))))
    return ScriptedTurn(text, tuple(recorded))


def _estimated_tokens(turn: ScriptedTurn) -> int:
    # About four characters per token: enough to exercise the token limits offline.
    size = len(turn.text) + len(json.dumps([list(call) for call in turn.calls]))
    return max(1, size // 4)


class ScriptedModel:
    """Replays recorded turns in order; turn n's calls get ids scripted-n-call-1, -2, ..."""

    source = "scripted"

    def __init__(self, turns: Sequence[ScriptedTurn]) -> None:
        self._turns = tuple(turns)
        self._served = 0

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, max_output_tokens: int = 0, timeout: float = 0
    ) -> ModelReply:
        if self._served >= len(self._turns):
            raise ModelError(f"the recorded transcript has only {len(self._turns)} turns")
        turn = self._turns[self._served]
        self._served += 1
        calls = tuple(
            ToolCall(id=f"scripted-{self._served}-call-{position}", name=name, arguments=copy.deepcopy(dict(arguments)))
            for position, (name, arguments) in enumerate(turn.calls, start=1)
        )
        return ModelReply(turn.text, calls, _estimated_tokens(turn))


def _decode_arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # left undecoded so argument validation refuses it as an ordinary observation


class OpenAIModel:
    """A hosted chat model behind the same complete() interface as the replay."""

    source = "live"

    def __init__(self, api_key: str, *, model: str = DEFAULT_MODEL) -> None:
        try:
            import openai  # imported here so the offline course never needs the package
        except ImportError as error:
            raise RuntimeError(
                f"{KEY_NAME} is set but the openai package is not installed; install it "
                f"(pip install openai) or unset {KEY_NAME} to replay the recorded transcript"
            ) from error
        self._errors = openai.OpenAIError
        self._client = openai.OpenAI(api_key=api_key)
        self.model = model

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, max_output_tokens: int, timeout: float
    ) -> ModelReply:
        try:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=messages,
                tools=tools,
                max_completion_tokens=max_output_tokens,
                timeout=timeout,
            )
        except self._errors as error:
            raise ModelError(f"{self.model} request failed: {error}") from error
        message = response.choices[0].message
        calls = tuple(
            ToolCall(id=call.id, name=call.function.name, arguments=_decode_arguments(call.function.arguments))
            for call in message.tool_calls or ()
            if call.type == "function"
        )
        tokens = response.usage.completion_tokens if response.usage is not None else 0
        return ModelReply(message.content or "", calls, tokens)


def _colab_secret() -> str | None:
    try:
        from google.colab import userdata  # only present on hosted notebook runtimes
    except ImportError:
        return None
    try:
        return userdata.get(KEY_NAME)
    # The secrets API raises several private error types for "absent" or "access not granted";
    # every one of them means there is no key for this run.
    except Exception:
        return None


def resolve_api_key() -> str | None:
    """The key from the notebook host's secrets, then from the environment; None when absent."""
    return _colab_secret() or os.environ.get(KEY_NAME) or None


def build_model(recorded_turns: Sequence[ScriptedTurn], *, model: str = DEFAULT_MODEL) -> ScriptedModel | OpenAIModel:
    """A hosted model when a key is found, otherwise a replay of recorded_turns (source "scripted")."""
    key = resolve_api_key()
    if key is None:
        return ScriptedModel(recorded_turns)
    return OpenAIModel(key, model=model)


def describe(result: LoopResult, source: str) -> str:
    """One line summarising how a run ended."""
    return (
        f"[{source}] {result.status}: {result.model_calls} model calls, {result.tool_calls} tool calls, "
        f"{result.estimated_cost_cents} cents estimated"
    )


def tool_trace(result: LoopResult) -> list[dict[str, Any]]:
    """Each tool observation in order, joined to the request that asked for it."""
    requests: dict[str, dict[str, Any]] = {}
    for message in result.messages:
        for request in message.get("tool_calls", ()):
            requests[request["id"]] = request["function"]
    trace = []
    for message in result.messages:
        if message["role"] != "tool":
            continue
        request = requests[message["tool_call_id"]]
        observed = json.loads(message["content"])
        trace.append(
            {
                "id": message["tool_call_id"],
                "tool": request["name"],
                "arguments": _decode_arguments(request["arguments"]),
                "result": observed,
                "ok": observed != TOOL_FAILED,
            }
        )
    return trace
