"""The grader's own copy of the unit's bounded loop, into which the student's admission is plugged.

Only the admission decision comes from the student (through the sandbox, as plain data). The loop,
the replayed model and the tools are trusted, so every counter the connection part checks is
produced by code the student cannot touch.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Callable, Sequence

ADMITTED = "CALL"
STOPS = ("MODEL_CALL_LIMIT", "MODEL_COST_LIMIT")
#: However the admission answers, the loop gives up after this many attempts.
HARD_STOP = 40

INITIAL_MESSAGES = [
    {"role": "system", "content": "Prepare replenishment drafts with the stock tools. Never purchase."},
    {"role": "user", "content": "What needs ordering today?"},
]


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: dict


@dataclass(frozen=True)
class Turn:
    content: str = ""
    calls: tuple[Call, ...] = ()

    def message(self) -> dict:
        message: dict = {"role": "assistant", "content": self.content}
        if self.calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments, sort_keys=True)}}
                for c in self.calls
            ]
        return message


class ProviderFailure(Exception):
    """The provider attempt failed after it was admitted (and charged)."""


FAIL = ProviderFailure("provider unavailable")


class Replay:
    """A scripted provider: each attempt takes the next turn, or raises a scripted failure."""

    def __init__(self, script: Sequence[Turn | ProviderFailure]) -> None:
        self._script = list(script)
        self.attempts = 0

    def complete(self, messages: list) -> Turn:
        self.attempts += 1
        if not self._script:
            raise ProviderFailure("script exhausted")
        step = self._script.pop(0)
        if isinstance(step, ProviderFailure):
            raise step
        return step


def shop_tool(call: Call) -> dict:
    """Deterministic stand-ins for the shop tools: the loop only needs an observation per call."""
    if call.name == "list_stock":
        return {"products": [{"sku": "SKU-VANILLA", "needed": 6}, {"sku": "SKU-STRAWBERRY", "needed": 4}]}
    if call.name == "draft_order":
        prices = {"SKU-VANILLA": 250, "SKU-STRAWBERRY": 275}
        quantity = call.arguments.get("quantity", 0)
        return {"sku": call.arguments.get("sku"), "quantity": quantity, "total_cents": prices.get(call.arguments.get("sku"), 0) * quantity}
    return {"error": "unknown tool"}


class AdmissionBroke(Exception):
    """The student's admission raised, hung or returned something that is not a decision."""


@dataclass
class Run:
    status: str
    model_calls: int
    tool_calls: int
    estimated_cents: int
    messages: list = field(default_factory=list)
    decisions: list = field(default_factory=list)
    answer: str | None = None

    def counters(self) -> tuple[str, int, int, int]:
        return (self.status, self.model_calls, self.tool_calls, self.estimated_cents)


def run_loop(
    admission: Callable[[dict], object],
    script: Sequence[Turn | ProviderFailure],
    *,
    max_calls: int,
    call_cost: int,
    budget: int,
    retry_failures: bool = False,
) -> Run:
    """Ask admission before every attempt; charge the attempt before the provider can fail."""
    model = Replay(script)
    run = Run("RUNNING", 0, 0, 0, copy.deepcopy(INITIAL_MESSAGES))
    seen: set[str] = set()
    for _ in range(HARD_STOP):
        state = {"used_calls": run.model_calls, "max_calls": max_calls, "spent": run.estimated_cents, "next_cost": call_cost, "budget": budget}
        decision = admission(dict(state))
        run.decisions.append((state, decision))
        if type(decision) is not str or (decision != ADMITTED and decision not in STOPS):
            raise AdmissionBroke(f"returned {decision!r}, not one of CALL, {', '.join(STOPS)}")
        if decision != ADMITTED:
            run.status = decision
            return run
        run.model_calls += 1
        run.estimated_cents += call_cost
        try:
            turn = model.complete(copy.deepcopy(run.messages))
        except ProviderFailure:
            if retry_failures:
                continue
            run.status = "MODEL_FAILED"
            return run
        ids = [c.id for c in turn.calls]
        if len(ids) != len(set(ids)) or seen.intersection(ids):
            run.status = "REPEATED_CALL_ID"
            return run
        seen.update(ids)
        run.messages.append(turn.message())
        if not turn.calls:
            run.status = "COMPLETED" if turn.content.strip() else "EMPTY_REPLY"
            run.answer = turn.content
            return run
        for call in turn.calls:
            run.tool_calls += 1
            run.messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(shop_tool(call), sort_keys=True)})
    run.status = "HARD_STOP"
    return run


def stock(call_id: str) -> Turn:
    return Turn(calls=(Call(call_id, "list_stock", {}),))


def drafts(*ids: str) -> Turn:
    skus = [("SKU-VANILLA", 6), ("SKU-STRAWBERRY", 4)]
    return Turn(calls=tuple(Call(i, "draft_order", {"sku": s, "quantity": q}) for i, (s, q) in zip(ids, skus)))


def answer(text: str = "Drafted vanilla; strawberry awaits a decision. Nothing was purchased.") -> Turn:
    return Turn(content=text)
