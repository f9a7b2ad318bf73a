"""Compare what student code handed back with what the rule says, with exact types.

Everything here is pure. It takes observations (plain data decoded in trusted code) and returns
verdicts; it never touches files or processes. Two audiences read a verdict: `reason` is safe for
students before the due date (it names no hidden input or expected value), `detail` is for after.
"""

from __future__ import annotations

import math
import reprlib
from dataclasses import dataclass
from typing import Any, Iterable, Protocol

_short = reprlib.Repr()
_short.maxstring = 120
_short.maxother = 120
_short.maxlist = 12
_short.maxdict = 12
_short.maxlevel = 4


class ObservationLike(Protocol):
    name: str
    outcome: str
    returned: object
    raised: Any
    args_after: tuple
    detail: str

    @property
    def ok(self) -> bool: ...


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str = ""
    detail: str = ""


PASS = Verdict(True)


def same(observed: object, expected: object) -> bool:
    """Equal and of exactly the same builtin types, all the way down.

    `True == 1` and `"CALL" == StrSubclass("CALL")` are both true in Python; neither is the same
    value here. Anything that is not an exact builtin (an Opaque stand-in for a hostile object)
    is never the same as anything.
    """
    if type(observed) is not type(expected):
        return False
    if type(expected) in (str, int, bool, type(None)):
        return observed == expected
    if type(expected) is float:
        return observed == expected or (math.isnan(observed) and math.isnan(expected))  # type: ignore[arg-type]
    if type(expected) in (list, tuple):
        return len(observed) == len(expected) and all(same(o, e) for o, e in zip(observed, expected))  # type: ignore[arg-type]
    if type(expected) is dict:
        if len(observed) != len(expected):  # type: ignore[arg-type]
            return False
        keys = {(type(k), k): k for k in observed}  # type: ignore[union-attr]
        return all((type(k), k) in keys and same(observed[keys[(type(k), k)]], v) for k, v in expected.items())  # type: ignore[index]
    return False


def show(value: object) -> str:
    """A short repr for feedback; never calls student code (values are already plain data)."""
    return _short.repr(value)


def what_happened(observation: ObservationLike) -> str:
    """What the call did, safe to show a student: no inputs, no messages their code could craft."""
    if observation.outcome == "returned":
        return f"returned a {_type_word(observation.returned)}"
    if observation.outcome == "raised":
        error = observation.raised
        if error is not None and error.builtin:
            return f"raised {error.type_name}"
        return "raised an exception of a class defined in your code"
    return {
        "timeout": "did not return in time",
        "crashed": "crashed the process it ran in",
        "missing": f"{observation.name} is not defined in your notebook",
        "protocol_error": "sent back something that is not plain data",
        "budget_exhausted": "was not run: earlier calls used up the time allowed",
    }.get(observation.outcome, observation.outcome)


def full_story(observation: ObservationLike) -> str:
    """Everything observed, for instructors and for students after the due date."""
    if observation.outcome == "returned":
        return f"returned {show(observation.returned)} ({_type_word(observation.returned)})"
    if observation.outcome == "raised" and observation.raised is not None:
        return f"raised {observation.raised.type_name}: {observation.raised.message[:300]}"
    return f"{what_happened(observation)} {observation.detail}".strip()


def _type_word(value: object) -> str:
    kind = type(value)
    if kind in (str, int, float, bool, list, tuple, dict) or value is None:
        return kind.__name__ if value is not None else "None"
    return f"{getattr(value, 'type_name', kind.__name__)} (not a plain built-in value)"


def expect_value(observation: ObservationLike, expected: object) -> Verdict:
    """The call returned exactly `expected`."""
    if observation.ok and same(observation.returned, expected):
        return PASS
    if observation.ok and isinstance(expected, str) and type(observation.returned) is str:
        reason = "returned a different status than the rule gives"
    elif observation.ok and type(observation.returned) is not type(expected):
        reason = f"{what_happened(observation)}, expected a {type(expected).__name__}"
    else:
        reason = what_happened(observation) if not observation.ok else "returned a different value than the rule gives"
    return Verdict(False, reason, f"expected {show(expected)}, {full_story(observation)}")


def expect_member(observation: ObservationLike, allowed: Iterable[str]) -> Verdict:
    """The call returned exactly a `str` that is one of `allowed`."""
    allowed = tuple(allowed)
    if observation.ok and type(observation.returned) is str and observation.returned in allowed:
        return PASS
    if observation.ok and type(observation.returned) is str:
        reason = "returned a string that is not one of the statuses"
    else:
        reason = what_happened(observation) if not observation.ok else f"{what_happened(observation)}, expected a str"
    return Verdict(False, reason, f"expected one of {', '.join(allowed)}; {full_story(observation)}")


def expect_unchanged(observation: ObservationLike, before: tuple) -> Verdict:
    """The call left its arguments as they were."""
    if not observation.ok and observation.outcome != "raised":
        return Verdict(False, what_happened(observation), full_story(observation))
    if same(tuple(observation.args_after), tuple(before)):
        return PASS
    return Verdict(
        False,
        "changed the input it was given",
        f"input before {show(before)}, after {show(observation.args_after)}",
    )


def all_of(*verdicts: Verdict) -> Verdict:
    """The first failing verdict, or PASS."""
    for verdict in verdicts:
        if not verdict.passed:
            return verdict
    return PASS
