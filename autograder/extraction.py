"""Slice the graded names and what they need out of a notebook's code cells, without running it.

The grader never executes the whole student notebook: its setup cell unpacks a course runtime
that is absent at grading time, later cells need that runtime, and a live cell may call a paid
API. This module reads the code cells, turns IPython syntax into Python, and keeps only the
top-level statements that bind or mutate a graded name or something a kept statement uses.

The reading follows a top-to-bottom run of the notebook:

* A name used by module-level code (a right-hand side, a decorator, a default argument, a
  ``for`` iterable, an ``.append(...)`` argument) means the binding live at that statement:
  the last binding before it, plus the mutations in between.
* A name used inside a function, lambda or method body is looked up when the function is
  called: after the notebook has run (the grader's call), so the last binding anywhere, and
  also at any top-level statement that may call it (`cases = build_cases()`).
* Bindings inside ``if``/``for``/``while``/``try``/``match`` may not happen, so the search
  keeps going back past them; the statement is kept whole.
* An earlier ``def``/``class`` of a needed name is kept too (the later one wins when
  executed), but only what its decorators, defaults and bases need: its body never runs.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import functools
import json
import re
import symtable
import warnings
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from IPython.core.inputtransformer2 import TransformerManager

__all__ = [
    "Cell",
    "Extraction",
    "NotebookError",
    "SkippedCell",
    "Statement",
    "extract",
    "extract_cells",
    "literal_value",
    "read_cells",
]

_REDOWNLOAD = (
    "Expected a Jupyter notebook (.ipynb). Re-download the notebook from Jupyter "
    "(File > Download) or Colab (File > Download > Download .ipynb) and upload that file "
    "without editing it by hand."
)


# --------------------------------------------------------------------------------------------
# Records


class NotebookError(Exception):
    """A file that cannot be read as a notebook; the message names it and says what to do."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


@dataclass(frozen=True)
class Cell:
    """One code cell."""

    index: int
    """Position among all cells of the notebook, 0-based; for a .py export, the chunk's."""
    source: str
    """The cell's text as the student wrote it (IPython syntax included)."""


@dataclass(frozen=True)
class Statement:
    """One top-level statement kept by the extraction."""

    cell: int
    """`Cell.index` of the cell holding the statement."""
    line: int
    """1-based line, within the student's cell, where the statement starts."""
    source: str
    """Exact text of the statement, after IPython syntax became Python."""
    defines: tuple[str, ...]
    """Top-level names the statement binds or mutates, in order of appearance."""


@dataclass(frozen=True)
class SkippedCell:
    """A code cell left out because it is not Python the grader can read."""

    cell: int
    reason: str
    """For example "IPython cell magic %%bash" or "syntax error at line 3: invalid syntax"."""


@dataclass(frozen=True)
class Extraction:
    """What grading needs from a notebook, in notebook order."""

    statements: tuple[Statement, ...]
    """Kept statements in notebook order (`from __future__` imports first, as Python needs)."""
    found: dict[str, int]
    """Graded name -> cell index of the binding that wins at the end of the notebook."""
    missing: tuple[str, ...]
    """Graded names bound nowhere in the readable cells."""
    skipped_cells: tuple[SkippedCell, ...]

    @property
    def module_source(self) -> str:
        """The statements as one module, each labelled with where it came from."""
        blocks = [f"# cell {s.cell}, line {s.line}\n{s.source}" for s in self.statements]
        return "\n\n".join(blocks) + "\n" if blocks else ""


# --------------------------------------------------------------------------------------------
# Reading notebooks and .py exports


def read_cells(path: Path) -> list[Cell]:
    """The code cells of a notebook (.ipynb) or of a .py export of one."""
    text = _read_text(path)
    if path.suffix.lower() == ".py":
        return _script_cells(text)
    return _notebook_cells(path, text)


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise NotebookError(
            path, f"could not be opened ({error.strerror}). Check that the file exists."
        ) from error
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise NotebookError(
            path,
            f"is not UTF-8 text (byte {error.start}: {error.reason}). {_REDOWNLOAD}",
        ) from error


def _notebook_cells(path: Path, text: str) -> list[Cell]:
    _check_notebook_json(path, text)
    try:
        with warnings.catch_warnings():
            # Missing cell ids and similar schema nits do not stop a code cell from being read.
            warnings.simplefilter("ignore")
            notebook = nbformat.reads(text, as_version=4, capture_validation_error={})
    except Exception as error:  # nbformat raises KeyError, ValidationError, NBFormatError...
        raise NotebookError(
            path, f"could not be read by nbformat ({error}). {_REDOWNLOAD}"
        ) from error
    return [_code_cell(path, index, cell) for index, cell in enumerate(notebook.cells)
            if cell.get("cell_type") == "code"]


def _check_notebook_json(path: Path, text: str) -> None:
    if not text.strip():
        raise NotebookError(path, f"is empty. {_REDOWNLOAD}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(
            path,
            f"is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}). "
            f"{_REDOWNLOAD}",
        ) from error
    if not isinstance(data, dict):
        raise NotebookError(
            path,
            f"holds a JSON {type(data).__name__}, not a notebook object with a \"cells\" list. "
            f"{_REDOWNLOAD}",
        )
    version = data.get("nbformat")
    if not isinstance(version, int):
        raise NotebookError(
            path, f"is JSON but has no \"nbformat\" version number. {_REDOWNLOAD}"
        )
    if version >= 4 and not isinstance(data.get("cells"), list):
        keys = ", ".join(sorted(map(str, data))) or "none"
        raise NotebookError(
            path, f"is JSON but has no \"cells\" list (keys found: {keys}). {_REDOWNLOAD}"
        )


def _code_cell(path: Path, index: int, cell: nbformat.NotebookNode) -> Cell:
    source = cell.get("source", "")
    if not isinstance(source, str):
        raise NotebookError(
            path,
            f"cell {index} has a source of type {type(source).__name__}; expected text. "
            f"{_REDOWNLOAD}",
        )
    return Cell(index, source)


_NBCONVERT_MARKER = re.compile(r"^# In\[[ 0-9]*\]:[ \t]*$", re.MULTILINE)
_PERCENT_MARKER = re.compile(r"^# ?%%(?!%)(?P<title>[^\n]*)$", re.MULTILINE)
_NON_CODE_PERCENT = re.compile(r"\[(markdown|md|raw)\]")


def _script_cells(text: str) -> list[Cell]:
    """Cells of a .py file: nbconvert "# In[ ]:" chunks, "# %%" cells, or the whole file."""
    text = _normalise_newlines(text)
    if _NBCONVERT_MARKER.search(text):
        chunks = [(chunk, True) for chunk in _split(text, _NBCONVERT_MARKER)]
    elif _PERCENT_MARKER.search(text):
        chunks = _percent_chunks(text)
    else:
        return [Cell(0, text)]
    head, *rest = chunks
    numbered = [head, *rest] if _has_code(head[0]) else rest
    return [Cell(index, _trim_chunk(chunk)) for index, (chunk, is_code) in enumerate(numbered)
            if is_code]


def _split(text: str, marker: re.Pattern[str]) -> list[str]:
    """The text before the first marker line, then the text after each marker line."""
    matches = list(marker.finditer(text))
    ends = [m.start() for m in matches[1:]] + [len(text)]
    bodies = [text[m.end():end].removeprefix("\n") for m, end in zip(matches, ends)]
    return [text[: matches[0].start()], *bodies]


def _percent_chunks(text: str) -> list[tuple[str, bool]]:
    titles = [m.group("title") for m in _PERCENT_MARKER.finditer(text)]
    head, *bodies = _split(text, _PERCENT_MARKER)
    marked = [(body, not _NON_CODE_PERCENT.search(title)) for body, title in zip(bodies, titles)]
    return [(head, True), *marked]


def _has_code(chunk: str) -> bool:
    return any(line.strip() and not line.lstrip().startswith("#") for line in chunk.split("\n"))


def _trim_chunk(chunk: str) -> str:
    # nbconvert writes two blank lines after each marker; dropping them makes line 1 of the
    # chunk line 1 of the student's cell.
    lines = _lines(chunk)
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines).rstrip() + "\n" if lines else ""


# --------------------------------------------------------------------------------------------
# From cell text to located top-level statements

_UNWRAPPED_CELL_MAGICS = frozenset({"time", "capture"})
"""Cell magics whose body ran once as ordinary code in the student's kernel."""
_UNWRAPPED_LINE_MAGICS = frozenset({"time"})
_PARSE_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_TOO_DEEP = "nested too deeply to analyse; split the expression into smaller parts"


class _Skip(Exception):
    """The cell cannot be read; `args[0]` is the reason for `SkippedCell`."""


@dataclass(frozen=True)
class _Located:
    line: int
    source: str
    node: ast.stmt


@dataclass(frozen=True)
class _Magic:
    kind: str  # "cell" or "line"
    name: str
    payload: str  # the cell body, or the line magic's argument


def _cell_statements(cell: Cell) -> list[_Located]:
    """Top-level statements of a cell, at the student's line numbers; raises `_Skip`."""
    try:
        return _parse_source(_normalise_newlines(cell.source), first_line=1)
    except RecursionError:
        raise _Skip(_TOO_DEEP) from None


def _parse_source(text: str, first_line: int) -> list[_Located]:
    """Statements of `text`, whose first line is line `first_line` of the student's cell."""
    lines = _lines(text)
    blank = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    body_lines = lines[blank:]
    if not body_lines:
        return []
    transformed = _ipython_to_python("\n".join(body_lines) + "\n")
    python_lines = _lines(transformed)
    to_cell = _line_mapper(body_lines, python_lines, base=first_line + blank)
    tree = _parse_python(transformed, to_cell)
    located: list[_Located] = []
    for node in tree.body:
        line = to_cell(_first_line(node))
        unwrapped = _unwrap_magic(node, line, alone=len(tree.body) == 1)
        located += unwrapped if unwrapped is not None else [
            _Located(line, _segment(python_lines, node), node)
        ]
    return located


def _unwrap_magic(node: ast.stmt, line: int, *, alone: bool) -> list[_Located] | None:
    """The code a magic ran, or None to keep `node` as it is; raises `_Skip` for a cell magic."""
    magic = _ipython_magic(node)
    if magic is None:
        return None
    if magic.kind == "cell" and magic.name in _UNWRAPPED_CELL_MAGICS:
        return _parse_source(magic.payload, first_line=line + 1)
    if magic.kind == "cell" and alone:
        raise _Skip(f"IPython cell magic %%{magic.name}")
    if magic.kind == "line" and magic.name in _UNWRAPPED_LINE_MAGICS:
        try:
            return _parse_source(magic.payload, first_line=line)
        except _Skip:
            return None  # the magic failed in the student's kernel too; keep the inert call
    return None


@functools.cache
def _transformer() -> TransformerManager:
    return TransformerManager()


def _ipython_to_python(source: str) -> str:
    try:
        return _transformer().transform_cell(source)
    except Exception:  # IPython's token rewriters can fail on broken input; parsing reports it
        return source


def _parse_python(source: str, to_cell: Callable[[int], int]) -> ast.Module:
    try:
        tree = compile(source, "<cell>", "exec", flags=_PARSE_FLAGS, dont_inherit=True)
        # Compiling catches what the parser lets through ('return' outside a function, ...).
        compile(tree, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as error:
        where = f" at line {to_cell(error.lineno)}" if error.lineno else ""
        raise _Skip(f"syntax error{where}: {error.msg}") from error
    except ValueError as error:  # null bytes, unencodable surrogates
        raise _Skip(f"cannot be parsed: {error}") from error
    except MemoryError:  # CPython's parser gives up this way on absurdly deep expressions
        raise _Skip(_TOO_DEEP) from None
    assert isinstance(tree, ast.Module)
    return tree


def _line_mapper(original: list[str], python: list[str], base: int) -> Callable[[int], int]:
    """Map a line of IPython's output back to the student's cell.

    IPython keeps one output line per input line, except that a magic or shell command
    continued with a backslash becomes one line; aligning the two texts recovers the rest.
    """
    if len(original) == len(python):
        return lambda line: base + line - 1
    table = [0] * len(python)
    matcher = difflib.SequenceMatcher(a=original, b=python, autojunk=False)
    for _tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for j in range(j1, j2):
            table[j] = i1 + min(j - j1, max(i2 - i1 - 1, 0))

    def to_cell(line: int) -> int:
        if 1 <= line <= len(table):
            return base + table[line - 1]
        return base + min(line, len(original) + 1) - 1

    return to_cell


def _ipython_magic(node: ast.stmt) -> _Magic | None:
    """The magic behind `get_ipython().run_cell_magic(...)` / `.run_line_magic(...)`, if any."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return None
    call = node.value
    method = call.func
    if not (isinstance(method, ast.Attribute) and _is_get_ipython_call(method.value)):
        return None
    texts = [arg.value for arg in call.args
             if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    if len(texts) != len(call.args) or call.keywords:
        return None
    if method.attr == "run_cell_magic" and len(texts) == 3:
        return _Magic("cell", texts[0], texts[2])
    if method.attr == "run_line_magic" and len(texts) == 2:
        return _Magic("line", texts[0], texts[1])
    return None


def _is_get_ipython_call(node: ast.expr) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "get_ipython" and not node.args and not node.keywords)


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _segment(lines: list[str], node: ast.stmt) -> str:
    """The exact text of a top-level statement, decorators included."""
    start_line = _first_line(node)
    start_col = node.col_offset if start_line == node.lineno else 0
    end_line = node.end_lineno or node.lineno
    end_col = node.end_col_offset
    if start_line == end_line:
        return _cut(lines[start_line - 1], start_col, end_col)
    head = _cut(lines[start_line - 1], start_col, None)
    tail = _cut(lines[end_line - 1], 0, end_col)
    return "\n".join([head, *lines[start_line:end_line - 1], tail])


def _cut(line: str, start: int, end: int | None) -> str:
    # ast offsets count UTF-8 bytes, not characters.
    return line.encode("utf-8")[start:end].decode("utf-8")


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _lines(text: str) -> list[str]:
    # Not str.splitlines: Python's tokenizer does not end lines at \x0c, \x1c or \u2028.
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


# --------------------------------------------------------------------------------------------
# What one statement binds, mutates and uses

_MUTATING_METHODS = frozenset({
    "append", "appendleft", "extend", "extendleft", "insert", "remove", "pop", "popleft",
    "popitem", "clear", "sort", "reverse", "update", "setdefault", "add", "discard",
    "difference_update", "intersection_update", "symmetric_difference_update",
    "__setitem__", "__delitem__", "__iadd__",
})
_COMPREHENSION_SCOPES = frozenset({"listcomp", "setcomp", "dictcomp", "genexpr"})
_AMBIENT = frozenset(dir(builtins)) | {"get_ipython", "display", "In", "Out", "exit", "quit"}
"""Names a notebook has without binding them; a star import never provides these."""


@dataclass(frozen=True)
class _Facts:
    definite: frozenset[str]
    """Names rebound whenever the statement runs."""
    maybe: frozenset[str]
    """Names rebound only on some paths (inside if/for/while/try/match)."""
    updates: frozenset[str]
    """Names whose current value the statement changes (.append, x[k] = v, +=, del)."""
    eager: frozenset[str]
    """Names read while the statement runs, bound before it."""
    lazy: frozenset[str]
    """Globals read by function, lambda and method bodies: looked up after the notebook ran."""
    imported: frozenset[str]
    defines: tuple[str, ...]
    star_import: bool
    future_import: bool
    is_definition: bool


@dataclass
class _Frame:
    kind: str  # "class" or "comprehension"
    names: set[str] = field(default_factory=set)


class _ModuleScope(ast.NodeVisitor):
    """Walk one top-level statement in evaluation order, as the module scope sees it."""

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.definite: set[str] = set()
        self.maybe: set[str] = set()
        self.updates: set[str] = set()
        self.eager: set[str] = set()
        self.imported: set[str] = set()
        self.touched: dict[str, None] = {}
        self.lazy_nodes: list[ast.AST] = []
        self.star_import = False
        self.future_import = False
        self._frames: list[_Frame] = []
        self._depth = 0

    # name handling --------------------------------------------------------------------------

    def _is_local(self, name: str) -> bool:
        for distance, frame in enumerate(reversed(self._frames)):
            # A class body's names are invisible from scopes nested in it.
            if frame.kind == "class" and distance > 0:
                continue
            if name in frame.names:
                return True
        return False

    def _load(self, name: str) -> None:
        if not self._is_local(name) and name not in self.bound:
            self.eager.add(name)

    def _store(self, name: str, *, walrus: bool = False) -> None:
        frames = [f for f in self._frames if not (walrus and f.kind == "comprehension")]
        if frames:
            frames[-1].names.add(name)
            return
        self.bound.add(name)
        (self.definite if self._depth == 0 else self.maybe).add(name)
        self.touched[name] = None

    def _mutate(self, name: str | None) -> None:
        if name is None or self._is_local(name):
            return
        self._load(name)
        self.updates.add(name)
        self.touched[name] = None

    def _target(self, target: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self._store(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._target(element)
        elif isinstance(target, ast.Starred):
            self._target(target.value)
        else:
            self.visit(target)
            self._mutate(_root_name(target))

    @contextmanager
    def _conditional(self) -> Iterator[None]:
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    def _block(self, statements: Sequence[ast.AST]) -> None:
        for statement in statements:
            self.visit(statement)

    # expressions ----------------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self._load(node.id)
        elif isinstance(node.ctx, ast.Store):
            self._store(node.id)
        else:
            self._mutate(node.id)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        with self._conditional():
            self._store(node.target.id, walrus=True)

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATING_METHODS:
            self._mutate(_root_name(node.func.value))

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._defaults(node.args)
        self.lazy_nodes.append(node)

    def _comprehension(self, node: ast.AST, results: Sequence[ast.expr]) -> None:
        generators: list[ast.comprehension] = node.generators  # type: ignore[attr-defined]
        self.visit(generators[0].iter)  # evaluated in the enclosing scope
        self._frames.append(_Frame("comprehension"))
        with self._conditional():
            for position, generator in enumerate(generators):
                if position:
                    self.visit(generator.iter)
                self._target(generator.target)
                self._block(generator.ifs)
            self._block(results)
        self._frames.pop()

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self._comprehension(node, [node.elt])

    def visit_SetComp(self, node: ast.SetComp) -> None:
        self._comprehension(node, [node.elt])

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        self._comprehension(node, [node.elt])

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node, [node.key, node.value])

    # simple statements ----------------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self._target(target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            # `x += ...` rebinds x from its previous value: a mutation, not a fresh binding.
            if self._is_local(node.target.id):
                return
            self._mutate(node.target.id)
            self.bound.add(node.target.id)
        else:
            self._target(node.target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.annotation)
        if node.value is not None or not isinstance(node.target, ast.Name):
            self._target(node.target)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                self._mutate(target.id)
            else:
                self._target(target)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.future_import = self.future_import or node.module == "__future__"
        for alias in node.names:
            if alias.name == "*":
                self.star_import = True
            else:
                self._import(alias.asname or alias.name)

    def _import(self, name: str) -> None:
        self._store(name)
        if not self._frames:
            self.imported.add(name)

    # definitions ----------------------------------------------------------------------------

    def _defaults(self, arguments: ast.arguments) -> None:
        self._block(arguments.defaults)
        self._block([d for d in arguments.kw_defaults if d is not None])

    def _annotations(self, arguments: ast.arguments) -> None:
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                 arguments.vararg, arguments.kwarg]
        self._block([a.annotation for a in every if a is not None and a.annotation is not None])

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._block(node.decorator_list)
        self._defaults(node.args)
        self._annotations(node.args)
        if node.returns is not None:
            self.visit(node.returns)
        self.lazy_nodes.append(node)
        self._store(node.name)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._block(node.decorator_list)
        self._block(node.bases)
        self._block([keyword.value for keyword in node.keywords])
        self._frames.append(_Frame("class"))
        self._block(node.body)  # a class body runs when the class statement runs
        self._frames.pop()
        self._store(node.name)

    # compound statements --------------------------------------------------------------------

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        before = set(self.bound)
        with self._conditional():
            self._block(node.body)
            after_body, self.bound = self.bound, set(before)
            self._block(node.orelse)
        # Only what both branches bind is surely bound afterwards.
        self.bound = before | (after_body & self.bound)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        with self._conditional():
            self._target(node.target)
            self._block(node.body)
            self._block(node.orelse)

    visit_AsyncFor = visit_For

    def visit_While(self, node: ast.While) -> None:
        self.visit(node.test)
        with self._conditional():
            self._block(node.body)
            self._block(node.orelse)

    def visit_Try(self, node: ast.Try) -> None:
        with self._conditional():
            self._block(node.body)
            self._block(node.handlers)
            self._block(node.orelse)
        self._block(node.finalbody)

    visit_TryStar = visit_Try

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self._store(node.name)
        self._block(node.body)

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self._target(item.optional_vars)
        self._block(node.body)

    visit_AsyncWith = visit_With

    def visit_Match(self, node: ast.Match) -> None:
        self.visit(node.subject)
        with self._conditional():
            for case in node.cases:
                self.visit(case.pattern)
                if case.guard is not None:
                    self.visit(case.guard)
                self._block(case.body)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        self.generic_visit(node)
        if node.name:
            self._store(node.name)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self._store(node.name)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self.generic_visit(node)
        if node.rest:
            self._store(node.rest)


def _root_name(node: ast.expr) -> str | None:
    """`cases` for `cases[0]["x"]`, `cases.items`, `cases.get(k).append`; None otherwise."""
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return node.id if isinstance(node, ast.Name) else None


def _facts(located: _Located) -> _Facts:
    scope = _ModuleScope()
    scope.visit(located.node)
    return _Facts(
        definite=frozenset(scope.definite),
        maybe=frozenset(scope.maybe - scope.definite),
        updates=frozenset(scope.updates),
        eager=frozenset(scope.eager),
        lazy=frozenset(_lazy_globals(located.source, scope.lazy_nodes)),
        imported=frozenset(scope.imported),
        defines=tuple(scope.touched),
        star_import=scope.star_import,
        future_import=scope.future_import,
        is_definition=isinstance(located.node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                ast.ClassDef)),
    )


def _lazy_globals(source: str, lazy_nodes: Sequence[ast.AST]) -> set[str]:
    """Globals read inside the statement's function and lambda bodies."""
    if not lazy_nodes:
        return set()
    try:
        table = symtable.symtable(source, "<statement>", "exec")
    except (SyntaxError, ValueError):
        # Over-approximate: every name read anywhere in those bodies.
        return {n.id for body in lazy_nodes for n in ast.walk(body)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return _globals_below(table, lazy=False)


def _globals_below(table: symtable.SymbolTable, *, lazy: bool) -> set[str]:
    names: set[str] = set()
    for child in table.get_children():
        # Comprehensions and class bodies run when their parent runs; anything else
        # (functions, lambdas, annotation scopes) runs later.
        is_lazy = lazy or (child.get_type() != "class"
                           and child.get_name() not in _COMPREHENSION_SCOPES)
        if is_lazy:
            names |= {s.get_name() for s in child.get_symbols()
                      if s.is_global() and (s.is_referenced() or s.is_declared_global())}
        names |= _globals_below(child, lazy=is_lazy)
    return names


# --------------------------------------------------------------------------------------------
# Slicing


class _Slicer:
    """Which statements are needed to give `names` their values at the end of the notebook.

    A lookup is (name, point, run): the binding of `name` live just before statement `point`,
    whose function bodies may run at statement `run` (a call during the notebook) and so read
    the globals live there. Graded names are looked up and run at the end.
    """

    def __init__(self, facts: Sequence[_Facts]) -> None:
        self._facts = facts
        self._end = len(facts)
        self._touching: dict[str, list[int]] = defaultdict(list)
        for index, fact in enumerate(facts):
            for name in fact.definite | fact.maybe | fact.updates:
                self._touching[name].append(index)
        self._stars = [i for i, fact in enumerate(facts) if fact.star_import]
        self._todo: list[tuple[str, int, int]] = []
        self._looked_up: set[tuple[str, int, int]] = set()
        self._expanded: set[tuple[int, int | None]] = set()
        self._kept: set[int] = set()

    def needed(self, names: Sequence[str]) -> list[int]:
        self._todo += [(name, self._end, self._end) for name in names]
        for index, fact in enumerate(self._facts):
            if fact.future_import:
                self._keep(index, run=None)
        while self._todo:
            self._look_up(*self._todo.pop())
        return sorted(self._kept)

    def winner(self, name: str) -> int | None:
        """Index of the last statement that binds `name`."""
        binders = [i for i in self._touching.get(name, [])
                   if name in self._facts[i].definite | self._facts[i].maybe]
        return binders[-1] if binders else None

    def _look_up(self, name: str, point: int, run: int) -> None:
        if (name, point, run) in self._looked_up:
            return
        self._looked_up.add((name, point, run))
        touching = self._touching.get(name, [])
        updates: list[int] = []
        winner = -1
        for index in reversed(touching[:bisect_left(touching, point)]):
            fact = self._facts[index]
            if winner >= 0:
                if name in fact.definite and fact.is_definition:
                    self._keep(index, run=None)
            elif name in fact.definite:
                winner = index
                self._keep(index, run)
                if name in fact.imported:
                    updates = []  # `sys.path.insert(...)` changes a module, not the program
            elif name in fact.maybe:
                self._keep(index, run)
            else:
                updates.append(index)
        for index in updates:
            self._keep(index, run)
        if name not in _AMBIENT:
            for index in self._stars:
                if winner < index < point:
                    self._keep(index, run)

    def _keep(self, index: int, run: int | None) -> None:
        """Keep a statement; `run` None means its function bodies never run."""
        if (index, run) in self._expanded:
            return
        self._expanded.add((index, run))
        self._kept.add(index)
        fact = self._facts[index]
        # What the statement reads may be called now, or later through the value it binds.
        # A mutated name is the exception: whoever reached this statement through that name
        # is already looking it up at `run`, and repeating that would make chains of
        # `.append` cells cost cubic time.
        self._todo += [(name, index, index) for name in fact.eager]
        if run is not None and run != index:
            self._todo += [(name, index, run) for name in fact.eager - fact.updates]
        if run is not None:
            self._todo += [(name, run, run) for name in fact.lazy]


# --------------------------------------------------------------------------------------------
# Public entry points


def extract_cells(cells: Sequence[Cell], names: Sequence[str]) -> Extraction:
    """Slice `names` and everything they need out of `cells`, without running anything."""
    wanted = _checked_names(names)
    statements: list[Statement] = []
    facts: list[_Facts] = []
    skipped: list[SkippedCell] = []
    for cell in cells:
        try:
            analysed = [(loc, _facts(loc)) for loc in _cell_statements(cell)]
        except _Skip as skip:
            skipped.append(SkippedCell(cell.index, str(skip)))
            continue
        except RecursionError:
            skipped.append(SkippedCell(cell.index, _TOO_DEEP))
            continue
        for loc, fact in analysed:
            statements.append(Statement(cell.index, loc.line, loc.source, fact.defines))
            facts.append(fact)
    slicer = _Slicer(facts)
    needed = slicer.needed(wanted)
    futures = [i for i in needed if facts[i].future_import]
    ordered = futures + [i for i in needed if not facts[i].future_import]
    winners = {name: slicer.winner(name) for name in wanted}
    return Extraction(
        statements=tuple(statements[i] for i in ordered),
        found={name: statements[i].cell for name, i in winners.items() if i is not None},
        missing=tuple(name for name, i in winners.items() if i is None),
        skipped_cells=tuple(skipped),
    )


def extract(path: Path, names: Sequence[str]) -> Extraction:
    """Read the notebook at `path` and slice `names` out of it."""
    return extract_cells(read_cells(path), names)


def literal_value(path: Path, name: str) -> object | None:
    """The value of the last top-level `name = <literal>`; None if absent or not a literal.

    Reads template texts (such as `prediction_notes`) from the release notebook without
    executing it. A later non-literal assignment wins and gives None, because the literal is
    then not the value the notebook ends with.
    """
    _checked_names([name])
    value: object | None = None
    for cell in read_cells(path):
        try:
            located = _cell_statements(cell)
        except _Skip:
            continue
        for item in located:
            assigned = _assigned_value(item.node, name)
            if assigned is not None:
                value = _literal(assigned)
    return value


def _assigned_value(node: ast.stmt, name: str) -> ast.expr | None:
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == name for t in node.targets
    ):
        return node.value
    if (isinstance(node, ast.AnnAssign) and node.value is not None
            and isinstance(node.target, ast.Name) and node.target.id == name):
        return node.value
    return None


def _literal(node: ast.expr) -> object | None:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _checked_names(names: Sequence[str]) -> tuple[str, ...]:
    if isinstance(names, str):
        raise TypeError(
            f"names must be a sequence of names such as ['decide_admission'], "
            f"not the single string {names!r}"
        )
    for name in names:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(
                f"{name!r} is not a Python identifier; names lists the functions and values "
                f"to extract, such as 'decide_admission' or 'TRANSFER_CASES'"
            )
    return tuple(dict.fromkeys(names))
