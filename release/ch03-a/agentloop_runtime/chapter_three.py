"""The learner track's Chapter 3 loop, written apart from agent_loop so the two can be compared."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Sequence

from . import shop as _shop
from .agent_loop import ModelError

shop_tools = MappingProxyType(
    {
        "SHOP": _shop.SHOP,
        "PRICES": _shop.PRICES,
        "NoArguments": _shop.NoArguments,
        "ProductArguments": _shop.ProductArguments,
        "DraftArguments": _shop.DraftArguments,
        "ToolCall": _shop.ToolCall,
        "build_tools": _shop.build_tools,
    }
)
"""The Chapter 2 names this chapter builds on."""


@dataclass(frozen=True)
class Limits:
    """The same bounds as the runtime loop, field for field."""

    model_calls: int = 8
    tool_calls: int = 16
    seconds: float = 120
    output_tokens: int = 4096
    total_output_tokens: int = 16_384
    estimated_call_cents: int = 2
    model_budget_cents: int = 20


@dataclass(frozen=True)
class Outcome:
    """How one run of this loop ended."""

    status: str
    messages: list[dict[str, Any]]
    model_calls: int
    tool_calls: int
    estimated_cost_cents: int
    answer: str = ""


def admit_next_call(case: dict[str, int]) -> str:
    """The unit's admission rule over a plain case: call count first, then cost exposure."""
    if case["used_calls"] >= case["max_calls"]:
        return "MODEL_CALL_LIMIT"
    if case["spent"] + case["next_cost"] > case["budget"]:
        return "MODEL_COST_LIMIT"
    return "CALL"


def assistant_message(reply: Any) -> dict[str, Any]:
    """The transcript entry for a model turn, tool requests included."""
    entry: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.calls:
        entry["tool_calls"] = []
        for call in reply.calls:
            encoded = json.dumps(call.arguments, sort_keys=True)
            entry["tool_calls"].append(
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": encoded}}
            )
    return entry


def run_loop(model: Any, dispatcher: Any, messages: Sequence[dict[str, Any]], *, limits: Limits) -> Outcome:
    """Admit, charge, ask, then run the turn's tools, until an answer or a limit."""
    transcript = copy.deepcopy(list(messages))
    used = {"model_calls": 0, "tool_calls": 0, "cents": 0, "tokens": 0}
    seen: set[str] = set()

    def outcome(status: str, answer: str = "") -> Outcome:
        return Outcome(status, transcript, used["model_calls"], used["tool_calls"], used["cents"], answer)

    while True:
        case = {
            "used_calls": used["model_calls"],
            "max_calls": limits.model_calls,
            "spent": used["cents"],
            "next_cost": limits.estimated_call_cents,
            "budget": limits.model_budget_cents,
        }
        decision = admit_next_call(case)
        if decision != "CALL":
            return outcome(decision)
        used["model_calls"] += 1
        used["cents"] += limits.estimated_call_cents
        try:
            reply = model.complete(
                copy.deepcopy(transcript),
                dispatcher.schemas(),
                max_output_tokens=limits.output_tokens,
                timeout=limits.seconds,
            )
        except ModelError:
            return outcome("MODEL_FAILED")

        used["tokens"] += reply.output_tokens
        if reply.output_tokens > limits.output_tokens or used["tokens"] > limits.total_output_tokens:
            return outcome("TOKEN_LIMIT")
        ids = [call.id for call in reply.calls]
        if len(ids) != len(set(ids)) or seen & set(ids):
            return outcome("MODEL_FAILED")
        if not reply.calls:
            if not reply.content.strip():
                return outcome("MODEL_FAILED")
            transcript.append(assistant_message(reply))
            return outcome("COMPLETED", reply.content)
        if used["tool_calls"] + len(reply.calls) > limits.tool_calls:
            return outcome("TOOL_LIMIT")

        seen.update(ids)
        transcript.append(assistant_message(reply))
        for call in reply.calls:
            used["tool_calls"] += 1
            result = dispatcher.invoke(call)
            transcript.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result, sort_keys=True)})
