"""Mutants of a reference solution: the cheap ways to game a status function, the likely mistakes, and the cases that catch them.

One implementation serves two users: the `counterexample` part asks whether a student's own case
rejects the constant answer that does best on the given cases, and the audit grades the hidden
suites against mutants generated here by rewriting the reference's AST (the constant answer among
them, written by `ConstantMutant.rewrite`). Everything here is pure: statements in, statements out.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar


@dataclass(frozen=True)
class ConstantMutant:
    """A function that ignores its input and always returns `answer`."""

    answer: str

    def __call__(self, *args: object) -> str:
        return self.answer

    @property
    def name(self) -> str:
        return f"always {self.answer}"

    def rewrite(self, function: ast.FunctionDef) -> ast.FunctionDef:
        """`function` with its body replaced by `return <answer>` (its docstring kept)."""
        return _with_body(function, [ast.Return(ast.Constant(self.answer))])


def constant_mutants(statuses: Sequence[str]) -> list[ConstantMutant]:
    """One constant mutant per status."""
    return [ConstantMutant(status) for status in statuses]


def passes(mutant: ConstantMutant, expected: object) -> bool:
    return type(expected) is str and expected == mutant.answer


def best_constants(expected_values: Sequence[object], statuses: Sequence[str]) -> list[ConstantMutant]:
    """The constant mutants that pass the most of the given cases (several on a tie).

    With the four given ch03-a transfer cases (CALL, COST_LIMIT, CALL_LIMIT, CALL_LIMIT) this is
    `always CALL_LIMIT`, which passes half of them.
    """
    mutants = constant_mutants(statuses)
    scores = [sum(passes(m, e) for e in expected_values) for m in mutants]
    top = max(scores, default=0)
    return [m for m, score in zip(mutants, scores) if score == top]


def rejects_all(expected: object, mutants: Sequence[ConstantMutant]) -> bool:
    """A case rejects a mutant when the mutant's answer is not the case's expected value."""
    return all(not passes(mutant, expected) for mutant in mutants)


# --------------------------------------------------------------------------------------------
# Records


class StatementLike(Protocol):
    """A top-level statement as extraction hands it over (`extraction.Statement`)."""

    @property
    def source(self) -> str: ...

    @property
    def defines(self) -> tuple[str, ...]: ...


S = TypeVar("S", bound=StatementLike)


class MutationError(Exception):
    """The reference does not have the shape the declaration promises; the message says what is missing."""


@dataclass(frozen=True)
class Target:
    """A graded function of the reference and what the audit knows about it."""

    function: str
    statuses: tuple[str, ...]
    """Every answer the function may give."""
    visible: tuple[tuple[tuple[object, ...], object], ...] = ()
    """The cases students see, as (arguments, expected): what a lookup mutant memorises."""


@dataclass(frozen=True)
class Mutant:
    """The reference's statements with one definition rewritten."""

    target: str
    """The function (or case list) that was rewritten."""
    operator: str
    """The key of the operator in OPERATORS or CASE_OPERATORS, e.g. "boundary"."""
    name: str
    """What this mutant does, for the audit table, e.g. "always CALL"."""
    gaming: bool
    """True for answers that game the suite rather than attempt the rule (capped by the audit)."""
    statements: tuple[Any, ...]
    """Every statement of the reference, one of them rewritten; what the sandbox loads."""
    source: str
    """The rewritten statement's source."""


Rewrites = Iterator[tuple[str, ast.FunctionDef]]
Operator = Callable[[ast.FunctionDef, Target], Rewrites]


# --------------------------------------------------------------------------------------------
# Operators on a function: each yields (what it does, the rewritten definition)


def _constant(function: ast.FunctionDef, target: Target) -> Rewrites:
    for mutant in constant_mutants(target.statuses):
        yield mutant.name, mutant.rewrite(function)


_LOOKUP = """
for _arguments, _answer in {table}:
    if [{parameters}] == list(_arguments):
        return _answer
return {default!r}
"""


def _lookup(function: ast.FunctionDef, target: Target) -> Rewrites:
    """Answer the visible cases from a table and everything else with one status."""
    if not target.visible:
        return
    table = repr([(list(arguments), expected) for arguments, expected in target.visible])
    parameters = ", ".join(argument.arg for argument in function.args.args)
    for default in target.statuses:
        body = ast.parse(_LOOKUP.format(table=table, parameters=parameters, default=default)).body
        yield f"visible cases looked up, else {default}", _with_body(function, body)


_FLIPS: dict[type[ast.cmpop], type[ast.cmpop]] = {ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Lt: ast.LtE, ast.LtE: ast.Lt}
_SYMBOLS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<="}


def _boundary(function: ast.FunctionDef, target: Target) -> Rewrites:
    """Each ordering comparison moved across its boundary (`>` ↔ `>=`, `<` ↔ `<=`), one at a time."""
    for site, compare in enumerate(_own(function, ast.Compare)):
        for position, op in enumerate(compare.ops):
            if type(op) in _FLIPS:
                mutated = copy.deepcopy(function)
                changed = _own(mutated, ast.Compare)[site]
                changed.ops[position] = _FLIPS[type(op)]()
                flip = f"{_SYMBOLS[type(op)]} as {_SYMBOLS[_FLIPS[type(op)]]}"
                yield f"{flip}: {ast.unparse(changed)}", mutated


def _swapped(function: ast.FunctionDef, target: Target) -> Rewrites:
    """Two checks in the other order: adjacent `if`s, or an `if` and its `elif`."""
    for site, block in enumerate(_blocks(function)):
        for index in range(len(block) - 1):
            if isinstance(block[index], ast.If) and isinstance(block[index + 1], ast.If):
                mutated = copy.deepcopy(function)
                body = _blocks(mutated)[site]
                body[index], body[index + 1] = body[index + 1], body[index]
                yield f"checks swapped: {ast.unparse(body[index].test)} first", mutated
    for site, branch in enumerate(_own(function, ast.If)):
        if len(branch.orelse) == 1 and isinstance(branch.orelse[0], ast.If):
            mutated = copy.deepcopy(function)
            outer = _own(mutated, ast.If)[site]
            inner = outer.orelse[0]
            (outer.test, outer.body), (inner.test, inner.body) = (inner.test, inner.body), (outer.test, outer.body)
            yield f"checks swapped: {ast.unparse(outer.test)} first", mutated


def _ignored_key(function: ast.FunctionDef, target: Target) -> Rewrites:
    """One key of the input never read: 0 in its place."""
    for key in _keys(function):
        yield f"ignores {key!r} (reads 0)", _replace_reads(function, key, lambda _: ast.Constant(0))


def _wrong_key(function: ast.FunctionDef, target: Target) -> Rewrites:
    """One key of the input read as another key of the same input."""
    keys = _keys(function)
    for key, other in zip(keys, keys[1:] + keys[:1]):
        if key != other:
            yield f"reads {other!r} for {key!r}", _replace_reads(function, key, lambda read: _subscript(read, other))


def _mutates_input(function: ast.FunctionDef, target: Target) -> Rewrites:
    """Right answers, but the caller's dict gains a key (as when a total is stashed in it)."""
    if not function.args.args or not _keys(function):
        return
    parameter = function.args.args[0].arg
    stash = ast.parse(f"{parameter}['audit_total'] = 0").body
    yield f"writes a key into its input {parameter!r}", _with_body(function, stash + _body(function))


_STR_SUBCLASS = "class Status(str):\n    pass\n"
_ALWAYS_EQUAL = """
class Anything:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    def __hash__(self):
        return 0
"""


def _str_subclass(function: ast.FunctionDef, target: Target) -> Rewrites:
    """Right answers, but of a `str` subclass (an `Enum(str)` does this)."""
    returns = _wrap_returns(function, lambda value: ast.Call(ast.Name("Status", ast.Load()), [value], []))
    yield "returns a str subclass", _with_body(returns, ast.parse(_STR_SUBCLASS).body + _body(returns))


def _always_equal(function: ast.FunctionDef, target: Target) -> Rewrites:
    """An object that claims to equal whatever it is compared with."""
    returns = _wrap_returns(function, lambda value: ast.Call(ast.Name("Anything", ast.Load()), [], []))
    yield "returns an always-equal object", _with_body(returns, ast.parse(_ALWAYS_EQUAL).body + _body(returns))


def _raises(function: ast.FunctionDef, target: Target) -> Rewrites:
    yield "raises RuntimeError", _with_body(function, ast.parse("raise RuntimeError('not finished')").body)


OPERATORS: dict[str, Operator] = {
    "constant": _constant,
    "lookup": _lookup,
    "boundary": _boundary,
    "swapped": _swapped,
    "ignored key": _ignored_key,
    "wrong key": _wrong_key,
    "mutates input": _mutates_input,
    "str subclass": _str_subclass,
    "always equal": _always_equal,
    "raises": _raises,
}
"""Every way the audit rewrites a function, by name (the names an `[audit]` section may list)."""

GAMING = frozenset({"constant", "lookup", "always equal"})
"""Operators that game the suite instead of attempting the rule; the audit caps what they keep."""


def generate(statements: Sequence[S], target: Target, operators: Sequence[str] | None = None) -> list[Mutant]:
    """Mutants of `target.function` in `statements`: one per rewrite, each unlike the reference and the others."""
    index, function = _definition(statements, target.function)
    seen = {ast.dump(function)}
    found = []
    for operator in operators if operators is not None else OPERATORS:
        for name, mutated in OPERATORS[operator](function, target):
            dump = ast.dump(mutated)
            if dump in seen:
                continue
            seen.add(dump)
            source = ast.unparse(ast.fix_missing_locations(mutated)) + "\n"
            rewritten = _replaced(statements, index, source)
            found.append(Mutant(target.function, operator, name, operator in GAMING, rewritten, source))
    return found


# --------------------------------------------------------------------------------------------
# Operators on a case list the student extends (e.g. TRANSFER_CASES): the reference's added cases


CaseRewrite = Callable[[ast.Tuple, list[tuple[Any, ...]], Sequence[str]], None]


def _given_case_renamed(case: ast.Tuple, given: list[tuple[Any, ...]], statuses: Sequence[str]) -> None:
    case.elts[1:] = [_literal(value) for value in given[0][1:]]


def _wrong_expected(case: ast.Tuple, given: list[tuple[Any, ...]], statuses: Sequence[str]) -> None:
    expected = case.elts[-1]
    right = expected.value if isinstance(expected, ast.Constant) else None
    case.elts[-1] = ast.Constant(next(status for status in statuses if status != right))


CASE_OPERATORS: dict[str, tuple[str, CaseRewrite | None]] = {
    "no case added": ("adds no case", None),
    "given case renamed": ("adds a given case under a new label", _given_case_renamed),
    "wrong expected": ("adds a case with a wrong expected value", _wrong_expected),
}
"""Every way the audit rewrites the cases the reference adds to a given list; None drops the additions."""


def generate_cases(statements: Sequence[S], name: str, statuses: Sequence[str]) -> list[Mutant]:
    """Mutants of the cases the reference adds to the given list `name` (`.append`, `.extend`, `+=`)."""
    binding = _binding(statements, name)
    given = _given(statements[binding], name)
    additions = [i for i, s in enumerate(statements) if i > binding and name in s.defines]
    if not additions:
        raise MutationError(f"the reference adds no case to {name} after `{name} = [...]`; add one (with .append)")
    found = []
    for operator, (label, rewrite) in CASE_OPERATORS.items():
        if rewrite is None:
            kept = tuple(s for i, s in enumerate(statements) if i not in additions)
            found.append(Mutant(name, operator, label, False, kept, ""))
            continue
        rewritten, sources = list(statements), []
        for index in additions:
            tree = ast.parse(statements[index].source)
            for case in _added_cases(tree, name):
                rewrite(case, given, statuses)
            sources.append(ast.unparse(ast.fix_missing_locations(tree)) + "\n")
            rewritten[index] = dataclasses.replace(statements[index], source=sources[-1])  # type: ignore[type-var]
        found.append(Mutant(name, operator, label, False, tuple(rewritten), "".join(sources)))
    return found


# --------------------------------------------------------------------------------------------
# Helpers


def _definition(statements: Sequence[StatementLike], name: str) -> tuple[int, ast.FunctionDef]:
    """The last top-level `def name` among the statements: the one that wins when they run."""
    for index in reversed(range(len(statements))):
        if name in statements[index].defines:
            tree = ast.parse(statements[index].source)
            nodes = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
            if nodes:
                return index, nodes[-1]
    raise MutationError(f"no `def {name}(...)` in the reference's extracted statements; the audit mutates functions by name")


def _binding(statements: Sequence[StatementLike], name: str) -> int:
    for index in reversed(range(len(statements))):
        tree = ast.parse(statements[index].source)
        if any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets) for n in tree.body):
            return index
    raise MutationError(f"no `{name} = [...]` in the reference's extracted statements")


def _given(statement: StatementLike, name: str) -> list[tuple[Any, ...]]:
    node = ast.parse(statement.source).body[-1]
    try:
        value = ast.literal_eval(node.value) if isinstance(node, ast.Assign) else None
    except ValueError:
        value = None
    if type(value) is not list or not value or not all(type(case) is tuple and len(case) == 3 for case in value):
        raise MutationError(f"`{name} = ...` in the reference is not a literal list of (label, arguments, expected) tuples")
    return value


def _added_cases(tree: ast.Module, name: str) -> list[ast.Tuple]:
    """The case tuples a statement adds: `name.append(case)`, `name.extend([...])`, `name += [...]`."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_name(node.func.value, name):
            if node.func.attr == "append" and node.args:
                found.append(node.args[0])
            elif node.func.attr == "extend" and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
                found += node.args[0].elts
        elif isinstance(node, ast.AugAssign) and _is_name(node.target, name) and isinstance(node.value, (ast.List, ast.Tuple)):
            found += node.value.elts
    return [case for case in found if isinstance(case, ast.Tuple) and len(case.elts) == 3]


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _replaced(statements: Sequence[S], index: int, source: str) -> tuple[S, ...]:
    rewritten = list(statements)
    rewritten[index] = dataclasses.replace(statements[index], source=source)  # type: ignore[type-var]
    return tuple(rewritten)


def _docstring(function: ast.FunctionDef) -> list[ast.stmt]:
    first = function.body[0] if function.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return [copy.deepcopy(first)]
    return []


def _body(function: ast.FunctionDef) -> list[ast.stmt]:
    """The body after the docstring."""
    return copy.deepcopy(function.body[len(_docstring(function)):])


def _with_body(function: ast.FunctionDef, body: list[ast.stmt]) -> ast.FunctionDef:
    """A copy of `function` (name, arguments, docstring) with a new body after the docstring."""
    mutated = copy.deepcopy(function)
    mutated.body = _docstring(function) + body
    return mutated


N = TypeVar("N", bound=ast.AST)


def _own(function: ast.FunctionDef, kind: type[N]) -> list[N]:
    """Nodes of `kind` in the function's own code, not in nested functions, classes or lambdas, in source order."""
    found: list[N] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(child, kind):
                found.append(child)
            visit(child)

    visit(function)
    return found


def _blocks(function: ast.FunctionDef) -> list[list[ast.stmt]]:
    """Every statement list of the function's own code: its body and those of its compound statements."""
    blocks = []
    for holder in [function, *_own(function, ast.stmt)]:
        for field in ("body", "orelse", "finalbody"):
            block = getattr(holder, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                blocks.append(block)
    return blocks


def _reads(function: ast.FunctionDef) -> list[ast.Subscript]:
    """`param["key"]` reads of a parameter with a constant string key."""
    parameters = {argument.arg for argument in function.args.args}
    return [
        node for node in _own(function, ast.Subscript)
        if isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name) and node.value.id in parameters
        and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)
    ]


def _keys(function: ast.FunctionDef) -> list[str]:
    """The keys the function reads from its parameters, in the order it first reads them."""
    return list(dict.fromkeys(read.slice.value for read in _reads(function)))  # type: ignore[attr-defined]


def _replace_reads(function: ast.FunctionDef, key: str, replacement: Callable[[ast.Subscript], ast.expr]) -> ast.FunctionDef:
    mutated = copy.deepcopy(function)
    wanted = {id(read) for read in _reads(mutated) if read.slice.value == key}  # type: ignore[attr-defined]

    class Replace(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
            return replacement(node) if id(node) in wanted else self.generic_visit(node)  # type: ignore[return-value]

    return Replace().visit(mutated)  # type: ignore[no-any-return]


def _subscript(read: ast.Subscript, key: str) -> ast.Subscript:
    return ast.Subscript(copy.deepcopy(read.value), ast.Constant(key), ast.Load())


def _wrap_returns(function: ast.FunctionDef, wrap: Callable[[ast.expr], ast.expr]) -> ast.FunctionDef:
    mutated = copy.deepcopy(function)
    for node in _own(mutated, ast.Return):
        node.value = wrap(node.value or ast.Constant(None))
    return mutated


def _literal(value: object) -> ast.expr:
    return ast.parse(repr(value), mode="eval").body
