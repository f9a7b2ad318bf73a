"""The bounded loop: admit the next attempt, charge it, ask the model, run the admitted tools."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, Sequence

from .tool_dispatch import ToolCall

STATUSES = frozenset(
    {"COMPLETED", "MODEL_CALL_LIMIT", "MODEL_COST_LIMIT", "TOOL_LIMIT", "TOKEN_LIMIT", "MODEL_FAILED"}
)
"""Every terminal status run_loop can return."""


class ModelError(RuntimeError):
    """The provider could not produce a turn; the attempt still counts."""


@dataclass(frozen=True)
class ModelReply:
    """One assistant turn: its text, the tool calls it requests and the output tokens it used."""

    content: str = ""
    calls: tuple[ToolCall, ...] = ()
    output_tokens: int = 0

    def message(self) -> dict[str, Any]:
        """The assistant message this turn adds to the transcript."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments, sort_keys=True)},
                }
                for call in self.calls
            ]
        return message


class Model(Protocol):
    """Anything that turns a transcript and tool schemas into a ModelReply."""

    source: str

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, max_output_tokens: int, timeout: float
    ) -> ModelReply: ...


class Tools(Protocol):
    """The dispatcher surface the loop needs."""

    def schemas(self) -> list[dict[str, Any]]: ...

    def invoke(self, call: ToolCall) -> Any: ...


@dataclass(frozen=True)
class Limits:
    """Bounds on one run; every field is a non-negative number."""

    model_calls: int = 8
    """Most provider attempts admitted, failed ones included."""
    tool_calls: int = 16
    """Most tool calls executed across the run."""
    seconds: float = 120
    """Per-attempt timeout handed to the provider; a timeout is a MODEL_FAILED attempt."""
    output_tokens: int = 4096
    """Most output tokens one turn may use."""
    total_output_tokens: int = 16_384
    """Most output tokens the whole run may use."""
    estimated_call_cents: int = 2
    """Exposure charged when an attempt is admitted; an estimate, not an invoice."""
    model_budget_cents: int = 20
    """Admission refuses an attempt whose charge would take exposure past this."""

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            allowed = (int, float) if spec.name == "seconds" else (int,)
            if isinstance(value, bool) or not isinstance(value, allowed) or value < 0:
                kind = "a non-negative number" if spec.name == "seconds" else "a non-negative int"
                raise ValueError(f"Limits.{spec.name} must be {kind}, got {value!r}")


@dataclass(frozen=True)
class LoopResult:
    """How a run ended and what it cost."""

    status: str
    """One of STATUSES."""
    messages: list[dict[str, Any]]
    """The transcript: the initial messages, admitted turns and every tool observation."""
    model_calls: int
    """Provider attempts admitted."""
    tool_calls: int
    """Tool calls executed."""
    estimated_cost_cents: int
    """Exposure charged at admission."""
    output_tokens: int = 0
    """Output tokens reported by the admitted turns."""
    answer: str = ""
    """The final text when the run COMPLETED, otherwise empty."""


def admission(limits: Limits, model_calls: int, spent_cents: int) -> str | None:
    """The refusal status for the next attempt, or None to admit it; call limit first."""
    if model_calls >= limits.model_calls:
        return "MODEL_CALL_LIMIT"
    if spent_cents + limits.estimated_call_cents > limits.model_budget_cents:
        return "MODEL_COST_LIMIT"
    return None


@dataclass
class _Run:
    limits: Limits
    messages: list[dict[str, Any]]
    model_calls: int = 0
    tool_calls: int = 0
    spent_cents: int = 0
    output_tokens: int = 0
    seen_ids: set[str] = field(default_factory=set)

    def finish(self, status: str, answer: str = "") -> LoopResult:
        return LoopResult(
            status, self.messages, self.model_calls, self.tool_calls, self.spent_cents, self.output_tokens, answer
        )


def _turn_problem(run: _Run, reply: ModelReply) -> str | None:
    """The status that stops the run because of this turn's shape or size, if any."""
    if reply.output_tokens > run.limits.output_tokens or run.output_tokens > run.limits.total_output_tokens:
        return "TOKEN_LIMIT"
    ids = [call.id for call in reply.calls]
    if len(set(ids)) != len(ids) or run.seen_ids.intersection(ids):
        return "MODEL_FAILED"  # a reused identifier would make observations ambiguous
    if not reply.calls and not reply.content.strip():
        return "MODEL_FAILED"
    if run.tool_calls + len(reply.calls) > run.limits.tool_calls:
        return "TOOL_LIMIT"  # the whole turn is refused before any of its calls runs
    return None


def _run_tools(run: _Run, dispatcher: Tools, reply: ModelReply) -> None:
    run.seen_ids.update(call.id for call in reply.calls)
    run.messages.append(reply.message())
    for call in reply.calls:
        run.tool_calls += 1
        observation = dispatcher.invoke(call)
        run.messages.append(
            {"role": "tool", "tool_call_id": call.id, "content": json.dumps(observation, sort_keys=True)}
        )


def run_loop(model: Model, dispatcher: Tools, messages: Sequence[dict[str, Any]], *, limits: Limits) -> LoopResult:
    """Run model turns and their tools until the model answers or a limit stops the run."""
    run = _Run(limits, copy.deepcopy(list(messages)))
    while True:
        refusal = admission(limits, run.model_calls, run.spent_cents)
        if refusal is not None:
            return run.finish(refusal)
        # Charge before the attempt: a failing provider must not look free.
        run.model_calls += 1
        run.spent_cents += limits.estimated_call_cents
        try:
            reply = model.complete(
                copy.deepcopy(run.messages),
                dispatcher.schemas(),
                max_output_tokens=limits.output_tokens,
                timeout=limits.seconds,
            )
        except ModelError:
            return run.finish("MODEL_FAILED")
        run.output_tokens += reply.output_tokens
        problem = _turn_problem(run, reply)
        if problem is not None:
            return run.finish(problem)
        if not reply.calls:
            run.messages.append(reply.message())
            return run.finish("COMPLETED", reply.content)
        _run_tools(run, dispatcher, reply)
